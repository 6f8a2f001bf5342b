"""The code tools on a monorepo, against git's own commands on the same tree.

    python benchmarks/monorepo.py [--sizes 1000,10000,50000] [--commits 100000] [--repeats 7] [--night] [--json]

Builds a synthetic monorepo from trees the project already has: copies of CTFd's and Healthchecks' real trees
(evals/apps/<app>/history.bundle, at an eval case's commit) in folders `svc000/`, `svc001/`, ... until the size is reached, a
folder of 5,000 generated modules, a 1 MB generated file, and a history made with `git fast-import` of `--commits`
commits after the tree's own, every tenth of them changing one hot file (so blame and log walk thousands of commits
that touched it). Then, per size, each tool's p50/p95 over `--repeats` runs beside git's command for the same answer:

| tool | git's own command |
|---|---|
| search_code, a string found nowhere | `git grep -n -i -I -F -m 20` |
| search_code, an identifier with 20 hits | the same |
| four searches at once from four threads | four `git grep` processes at once |
| list_directory of the 5,000-module folder | `git ls-files -- <folder>` |
| read_file of the 1 MB file (numbered) | `git show HEAD:<file>` |
| the trace-path map (PathMap.of_host) | `git ls-files` |
| blame of 5 lines of the hot file | `git blame -w -L` over them |
The ratio printed is NightWatch's p50 to git's p50, measured side by side in one run.

`--night` also runs a whole offline night at each size: the Python demo's application sits at the monorepo's root
among the copies, its errors are the demo's, its fixes are verified in the sandbox (with NightWatch's own environment,
as the demo's are), and the offline model answers in milliseconds, so the night's wall time is its non-model time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nightwatch.codehosts.local import LocalRepoHost  # noqa: E402
from nightwatch.trace_paths import PathMap  # noqa: E402

TREES = {"ctfd": "ctfd-duplicate-solution", "healthchecks": "healthchecks-ping-non-utf8-body"}
HOT = "hot/ledger.py"
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "bench",
           "GIT_AUTHOR_EMAIL": "bench@x.invalid", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@x.invalid"}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, input=stdin, capture_output=True, check=True).stdout


def source_trees(work: Path) -> list[Path]:
    out = []
    for app, case in TREES.items():
        tree = work / f"src-{app}"
        subprocess.run(["git", "clone", "-q", str(ROOT / "evals" / "apps" / app / "history.bundle"), str(tree)], env=GIT_ENV,
                       check=True, capture_output=True)
        git(tree, "fetch", "-q", str(ROOT / "evals" / "apps" / app / "history.bundle"), "refs/cases/*:refs/cases/*")
        git(tree, "checkout", "-q", f"refs/cases/{case}/parent")
        out.append(tree)
    return out


def build(work: Path, size: int, sources: list[Path], commits: int) -> Path:
    """A repository of about `size` tracked files and `commits` commits after its first, the Python demo's application
    at its root."""
    repo = work / f"mono-{size}"
    shutil.copytree(ROOT / "nightwatch" / "demo_python" / "app", repo, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite3"))
    files = [(src, rel) for src in sources for rel in git(src, "ls-files", "-z").decode().split("\0")
             if rel and not rel.endswith(".gitignore")]  # a copied .gitignore would hide later copies from git
    generated = min(5_000, size // 5)
    (repo / "generated").mkdir()
    for i in range(generated):
        (repo / "generated" / f"mod_{i:05d}.py").write_text(f"VALUE_{i} = {i}\n\n\ndef f_{i}(x):\n    return x + {i}\n")
    (repo / "data").mkdir()
    (repo / "data" / "big.txt").write_text("".join(f"line {i}: {'x' * 40}\n" for i in range(20_000)))  # ~1 MB
    copies, count = 0, sum(1 for f in repo.rglob("*") if f.is_file())
    while count < size:
        for src, rel in files:
            if count >= size:
                break
            target = repo / f"svc{copies:03d}" / src.name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            source = src / rel
            if source.is_file() and not source.is_symlink():
                shutil.copyfile(source, target)
                count += 1
        copies += 1
    (repo / "hot").mkdir()
    (repo / HOT).write_text("".join(f"def entry_{i}(amount):\n    return amount * {i}\n\n" for i in range(200)))
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the tree")
    history(repo, commits)
    return repo


def history(repo: Path, commits: int) -> None:
    """`commits` commits made with git fast-import: every tenth rewrites one line of the hot file, the others add a
    line to a small changelog, so the hot file has commits/10 commits in its history."""
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    lines = (repo / HOT).read_text().splitlines(keepends=True)
    stream, when = [], 1_700_000_000
    for n in range(commits):
        when += 60
        if n % 10 == 0:
            k = 3 * ((n // 10) % 200) + 1
            lines[k] = f"    return amount * {n}  # revised\n"
            path, body = HOT, "".join(lines).encode()
        else:
            path, body = f"changes/{n % 100:02d}.txt", f"change {n}\n".encode()
        message = f"change {n}".encode()
        stream.append(b"commit refs/heads/main\n" + f"committer bench <bench@x.invalid> {when} +0000\n".encode()
                      + f"data {len(message)}\n".encode() + message + b"\n"
                      + (f"from {head}\n".encode() if n == 0 else b"")
                      + f"M 100644 inline {path}\ndata {len(body)}\n".encode() + body + b"\n")
    git(repo, "fast-import", "--quiet", "--force", stdin=b"".join(stream))
    git(repo, "reset", "-q", "--hard", "main")


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def git_grep(repo: Path, needle: str) -> None:
    subprocess.run(["git", "grep", "-n", "-i", "-I", "-F", "-m", "20", needle], cwd=repo, env=GIT_ENV, capture_output=True)


def four(fn: Callable[[], object]) -> None:
    threads = [threading.Thread(target=fn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def measure(repo: Path, repeats: int) -> dict[str, dict[str, float]]:
    host = LocalRepoHost(repo)
    host.tracked_files()  # listed once per night, as a night does
    hot_lines = [1 + 3 * k for k in range(5)]
    pairs: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "search, found nowhere": (lambda: host.search_code("NoSuchStringAnywhere"), lambda: git_grep(repo, "NoSuchStringAnywhere")),
        "search, 20 hits": (lambda: host.search_code("current_user", limit=20), lambda: git_grep(repo, "current_user")),
        "4 searches at once": (lambda: four(lambda: host.search_code("NoSuchStringAnywhere")),
                               lambda: four(lambda: git_grep(repo, "NoSuchStringAnywhere"))),
        "list 5,000-file folder": (lambda: LocalRepoHost(repo).list_directory("generated"),
                                   lambda: git(repo, "ls-files", "--", "generated")),
        "read 1 MB file": (lambda: host.read_file("data/big.txt", numbered=True), lambda: git(repo, "show", "HEAD:data/big.txt")),
        "trace-path map": (lambda: PathMap.of_host(LocalRepoHost(repo)), lambda: git(repo, "ls-files", "-z")),
        "blame 5 hot lines": (lambda: host.blame(HOT, hot_lines),
                              lambda: git(repo, "blame", "-w", "--porcelain", *(f"-L{n},{n}" for n in hot_lines), "--", HOT)),
    }
    out = {}
    for name, (ours, theirs) in pairs.items():
        mine, gits = [], []
        for _ in range(repeats):  # alternated, so the machine's noise hits both alike
            mine += timed(ours, 1)
            gits += timed(theirs, 1)
        out[name] = {"p50": round(p(mine, 0.5), 4), "p95": round(p(mine, 0.95), 4), "git_p50": round(p(gits, 0.5), 4),
                     "git_p95": round(p(gits, 0.95), 4), "ratio": round(p(mine, 0.5) / max(p(gits, 0.5), 1e-6), 2)}
    return out


def night(repo: Path, work: Path) -> dict[str, object]:
    """An offline night of the Python demo's errors on the monorepo; its wall time and what it verified."""
    home = work / f"home-{repo.name}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "NIGHTWATCH_", "NEW_RELIC_", "GITHUB_",
                                                                     "SLACK_", "SENTRY_", "PREFECT_API"))}
    env |= {"NIGHTWATCH_HOME": str(home), "NIGHTWATCH_DEMO": "python", "NIGHTWATCH_CODE_PATH": str(repo),
            "NIGHTWATCH_TEST_ENV": sys.prefix}
    started = time.perf_counter()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "nightwatch"), "run", "--output", "json", "--until", "2026-11-26T06:00"],
                          env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"the night failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    verified = sum(1 for r in report["results"] if (r.get("verification") or {}).get("status") == "verified")
    return {"seconds": round(seconds, 1), "analysed": sum(1 for r in report["results"] if r.get("analysis")), "verified": verified}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--night", action="store_true", help="also run a whole offline night at each size")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nightwatch-monorepo-"))
    try:
        sources = source_trees(work)
        results = {}
        for size in (int(s) for s in args.sizes.split(",")):
            started = time.perf_counter()
            repo = build(work, size, sources, args.commits)
            built = time.perf_counter() - started
            tracked = len(git(repo, "ls-files", "-z").split(b"\0")) - 1
            results[size] = {"files": tracked, "built_s": round(built, 1), "tools": measure(repo, args.repeats)}
            if args.night:
                results[size]["night"] = night(repo, work)
            shutil.rmtree(repo)
            if not args.json:
                print(f"\n{tracked:,} files, {args.commits:,} commits (built in {built:.0f} s); p50/p95 s, git's p50/p95, ratio of p50s")
                for name, r in results[size]["tools"].items():
                    print(f"  {name:<24} {r['p50']:>8.3f} {r['p95']:>8.3f}   git {r['git_p50']:>8.3f} {r['git_p95']:>8.3f}   {r['ratio']:>6.2f}x")
                if args.night:
                    n = results[size]["night"]
                    print(f"  a whole offline night: {n['seconds']} s, {n['analysed']} analysed, {n['verified']} fixes verified")
        if args.json:
            print(json.dumps(results, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
