"""Knowledge at scale: search, upsert and a night's knowledge steps over 1K, 10K and 100K documents.

Documents are made by the project's own writer (`merge`, `render_doc`, `doc_name`: the frontmatter and
body a night writes), spread over 1,000 error classes and 4,800 transactions, then indexed once (the
first night after an upgrade does the same). Each size runs in a process of its own, so its RAM is its own.

Printed per size:
- first index: building the DuckDB index from the documents (once; later nights only upsert);
- search p50/p95: `search_prior_knowledge` as research calls it (candidates, scoring, the top documents
  read), over 200 errors: known fingerprints, new errors of known classes, unrelated ones;
- open: opening the index (each research task opens it);
- upsert p50/p95: rewriting one document and upserting it, as step 12 does for each analysis;
- night: step 0 (open + sync: picks up hand edits), research for 5 errors, step 12 (5 documents and
  the snapshot for analysts), step 13 (history of tonight's classes and modules, patterns);
- night RAM: the peak resident set of a fresh process that runs those steps; disk: documents, index.

    python benchmarks/knowledge_scale.py                     # 1K, 10K, 100K (about 10 minutes)
    python benchmarks/knowledge_scale.py --sizes 1000 10000 --json
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nightwatch.knowledge_store.documents import ERRORS_DIR, doc_name, merge, render_doc, write_error_doc  # noqa: E402
from nightwatch.knowledge_store.index import index_path, open_index  # noqa: E402
from nightwatch.knowledge_store.metrics import MetricsStore  # noqa: E402
from nightwatch.knowledge_store.search import search_prior_knowledge  # noqa: E402

from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, FileChange  # noqa: E402
from nightwatch.patterns import detect_patterns, module_of  # noqa: E402

MODULES = ("Orders", "Users", "Billing", "Carts", "Invoices", "Payments", "Reports", "Sessions", "Mailers", "Exports",
           "Imports", "Accounts", "Profiles", "Search", "Webhooks", "Shipping", "Coupons", "Catalog", "Reviews", "Admin")
NOUNS = ("order", "user", "invoice", "payment", "cart", "session", "token", "account", "profile", "report", "export",
         "coupon", "address", "shipment", "review", "product", "price", "tax", "refund", "subscription")
ACTIONS = ("show", "update", "create", "destroy", "index", "edit", "perform", "sync", "refresh", "confirm", "cancel", "retry")
CLASSES = [f"{m}::{kind}Error{i}" for m in MODULES for kind in ("Validation", "State", "Lookup", "Timeout", "Parse")
           for i in range(10)]  # 1,000 classes
SEARCHES = 200
UPSERTS = 30


def error_of(rng: random.Random, i: int) -> ErrorGroup:
    module = rng.choice(MODULES).lower()
    transaction = f"Controller/{module}{rng.randrange(240)}/{rng.choice(ACTIONS)}"
    message = (f"undefined method `{rng.choice(NOUNS)}_{rng.choice(NOUNS)}' for nil in {rng.choice(NOUNS)} "
               f"#{i} ({rng.choice(NOUNS)} {rng.choice(ACTIONS)})")
    return ErrorGroup(error_class=rng.choice(CLASSES), transaction=transaction, message=message, occurrences=rng.randint(1, 500))


def result_of(rng: random.Random, error: ErrorGroup, run_id: str) -> ErrorAnalysisResult:
    noun, other = rng.choice(NOUNS), rng.choice(NOUNS)
    path = f"app/models/{noun}.rb"
    analysis = Analysis(
        title=f"{error.error_class} in {error.transaction}",
        reasoning=f"The {noun} reaches {other} before it is loaded; " * 8,
        root_cause=f"{noun.title()}#{other} is nil when the {rng.choice(NOUNS)} was {rng.choice(ACTIONS)}ed",
        confidence=rng.choice(["low", "medium", "high"]), has_fix=rng.random() < 0.4,
        file_changes=[FileChange(path=path, action="modify", description=f"guard {other}")],
        suggested_next_steps=[f"Check {noun} callbacks"])
    return ErrorAnalysisResult(run_id=run_id, error=error, analysis=analysis, iterations=rng.randint(1, 12))


def generate(knowledge: Path, count: int, rng: random.Random) -> list[ErrorGroup]:
    """`count` documents as the writer renders them (no fsync: this is set-up, not what is measured)."""
    folder = knowledge / ERRORS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    errors = []
    for i in range(count):
        error = error_of(rng, i)
        result = result_of(rng, error, f"night-{i % 365}")
        hashes = {f.path: f"{rng.getrandbits(128):032x}" * 2 for f in result.analysis.file_changes}  # type: ignore[union-attr]
        meta, body = merge({}, "", result, hashes, date(2025, 1, 1 + i % 28))
        (folder / doc_name(meta)).write_text(render_doc(meta, body), encoding="utf-8")
        errors.append(error)
    return errors


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def queries(rng: random.Random, known: list[ErrorGroup]) -> list[ErrorGroup]:
    """A third known errors, a third new errors of known classes, a third unrelated."""
    picked = [rng.choice(known) for _ in range(SEARCHES // 3)]
    picked += [e.model_copy(update={"message": e.message + " again", "transaction": e.transaction + "/x"})
               for e in (rng.choice(known) for _ in range(SEARCHES // 3))]
    picked += [ErrorGroup(error_class=f"Unrelated{i}::Boom", transaction=f"Job/unrelated{i}", message="socket closed")
               for i in range(SEARCHES - len(picked))]
    return picked


def timed(action) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def measure(count: int) -> dict:
    rng = random.Random(count)
    with tempfile.TemporaryDirectory(prefix="nw-knowledge-") as tmp:
        home = Path(tmp)
        knowledge = home / "knowledge"
        known = generate(knowledge, count, rng)
        started = time.perf_counter()
        with open_index(knowledge) as index:
            assert index.counts()["solutions"] == count, index.counts()
        first_index = time.perf_counter() - started
        figures = {"documents": count, "first_index_s": round(first_index, 1)}
        figures.update(search_figures(knowledge, rng, known))
        figures.update(upsert_figures(knowledge, rng, known))
        sample = home / "sample.json"
        sample.write_text(json.dumps([e.model_dump(mode="json") for e in rng.sample(known, 3)]))
        child = subprocess.run([sys.executable, __file__, "--night", str(home)], capture_output=True, text=True, check=True)
        figures.update(json.loads(child.stdout.strip().splitlines()[-1]))
        figures["documents_mb"] = round(sum(p.stat().st_size for p in (knowledge / ERRORS_DIR).iterdir()) / 2**20, 1)
        figures["index_mb"] = round(index_path(knowledge).stat().st_size / 2**20, 1)
    return figures


def search_figures(knowledge: Path, rng: random.Random, known: list[ErrorGroup]) -> dict:
    files = ["app/models/order.rb", "app/controllers/orders_controller.rb"]
    with open_index(knowledge) as index:
        search_prior_knowledge(known[0], index, files)  # warm
        took = [timed(lambda e=e: search_prior_knowledge(e, index, files)) for e in queries(rng, known)]
        hits = sum(1 for e in known[:50] if (found := search_prior_knowledge(e, index, files)) and found[0].fingerprint == e.fingerprint)
    opens = [timed(lambda: _open_close(knowledge)) for _ in range(20)]
    return {"search_p50_ms": round(statistics.median(took), 1), "search_p95_ms": round(percentile(took, 0.95), 1),
            "exact_hits": f"{hits}/50", "open_p50_ms": round(statistics.median(opens), 1)}


def _open_close(knowledge: Path) -> None:
    with open_index(knowledge):
        pass


def upsert_figures(knowledge: Path, rng: random.Random, known: list[ErrorGroup]) -> dict:
    took = []
    with open_index(knowledge) as index:
        for error in rng.sample(known, UPSERTS):
            existing = index.paths_of([error.fingerprint]).get(error.fingerprint)
            result = result_of(rng, error, "night-upsert")

            def one(result: ErrorAnalysisResult = result, existing: Path | None = existing) -> None:
                path = write_error_doc(result, knowledge, existing=existing)
                index.upsert([path])  # type: ignore[list-item]
            took.append(timed(one))
    return {"upsert_p50_ms": round(statistics.median(took), 1), "upsert_p95_ms": round(percentile(took, 0.95), 1)}


def night_figures(home: Path) -> dict:
    """Steps 0, 3.5 (5 errors), 12 and 13 of a night with 3 known errors and 2 new ones, as the tasks call them, in a
    process of its own: its peak RAM is what a night's knowledge steps need."""
    knowledge, rng = home / "knowledge", random.Random(7)
    known = [ErrorGroup.model_validate(e) for e in json.loads((home / "sample.json").read_text())]
    tonight = known + [error_of(rng, 10**7 + i) for i in range(2)]
    results = [result_of(rng, e, "night-bench") for e in tonight]
    steps: dict[str, float] = {}
    started = time.perf_counter()
    with open_index(knowledge) as index:
        index.sync()
        state = index.state()
    steps["step0_ms"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    for error in tonight:
        with open_index(Path(state.path)) as index:
            search_prior_knowledge(error, index, ["app/models/order.rb"])
    steps["research_ms"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    with open_index(knowledge) as index:
        where = index.paths_of(r.fingerprint for r in results)
        paths = [write_error_doc(r, knowledge, existing=where.get(r.fingerprint)) for r in results]
        index.upsert([p for p in paths if p])
        snapshot = index.snapshot()
    MetricsStore(home).write_knowledge_index(snapshot)
    steps["step12_ms"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    with open_index(knowledge) as index:
        history = index.history({e.error_class for e in tonight}, {module_of(e.transaction) for e in tonight})
        detect_patterns(results, history)
    steps["step13_ms"] = (time.perf_counter() - started) * 1000
    steps["night_knowledge_s"] = sum(steps.values()) / 1000
    figures = {k: round(v, 1 if k.endswith("ms") else 2) for k, v in steps.items()}
    return figures | {"night_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process measuring one size
    parser.add_argument("--night", type=Path, help=argparse.SUPPRESS)  # a child process running one night's steps
    args = parser.parse_args()
    if args.night:
        print(json.dumps(night_figures(args.night)))
        return
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    rows = []
    for size in args.sizes:
        child = subprocess.run([sys.executable, __file__, "--one", str(size)], capture_output=True, text=True, check=True)
        rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
        if not args.json:
            print(f"measured {size:,} documents", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print_table(rows)


def print_table(rows: list[dict]) -> None:
    columns = [("documents", "docs"), ("search_p50_ms", "search p50 ms"), ("search_p95_ms", "search p95 ms"),
               ("exact_hits", "exact hits"), ("open_p50_ms", "open ms"), ("upsert_p50_ms", "upsert p50 ms"),
               ("upsert_p95_ms", "upsert p95 ms"), ("step0_ms", "step 0 ms"), ("research_ms", "research x5 ms"),
               ("step12_ms", "step 12 ms"), ("step13_ms", "step 13 ms"), ("night_knowledge_s", "night s"),
               ("first_index_s", "first index s"), ("night_rss_mb", "night RAM MB"), ("documents_mb", "docs MB"),
               ("index_mb", "index MB")]
    print("| " + " | ".join(title for _, title in columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(f"{row[key]:,}" if isinstance(row[key], int) else str(row[key]) for key, _ in columns) + " |")
    print(f"\n{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
