"""Check the lobsters-* cases: export structure, frames against each case's code (its slice of
evals/apps/lobsters/history.bundle), origin against the fix diff."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import tempfile  # noqa: E402

from nightwatch.eval_apps import AppRepositories  # noqa: E402
from nightwatch.sources.parse import parse_stack_trace  # noqa: E402

EVALS = Path(__file__).resolve().parents[2] / "evals"
GIT = ["git", f"--git-dir={os.environ.get('LOBSTERS_GIT_DIR', 'lobsters.git')}"]
EXPORTED = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
HI = int(EXPORTED.timestamp() * 1000)
LO = HI - 24 * 3600 * 1000
CASES = {k["id"]: k for k in json.loads((Path(__file__).resolve().parent / "cases.json").read_text())}
problems: list[str] = []


def bad(case: str, msg: str) -> None:
    problems.append(f"{case}: {msg}")


def results(resp: dict) -> list[dict]:
    assert set(resp) == {"data"} and set(resp["data"]) == {"actor"} and set(resp["data"]["actor"]) == {"account"}
    assert set(resp["data"]["actor"]["account"]) == {"nrql"} and set(resp["data"]["actor"]["account"]["nrql"]) == {"results"}
    return resp["data"]["actor"]["account"]["nrql"]["results"]


def old_hunks(parent: str, fix: str, path: str) -> list[tuple[int, int]]:
    diff = subprocess.run(GIT + ["diff", "-U0", parent, fix, "--", path], capture_output=True, text=True, check=True).stdout
    out = []
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", diff, re.M):
        start, count = int(m.group(1)), int(m.group(2) or 1)
        # a pure insertion (count 0) sits after line `start`
        out.append((start, start + count - 1) if count else (start, start + 1))
    return out


noise_total = []
scratch = Path(tempfile.mkdtemp(prefix="lobsters-verify-"))
apps = AppRepositories(EVALS / "apps", scratch / "apps")
for folder in sorted(EVALS.glob("lobsters-*")):
    cid = folder.name
    code = apps.check_out("lobsters", cid, scratch / cid)  # the case's code: its slice's last commit
    k = CASES[cid]
    exp = yaml.safe_load((folder / "expected.yml").read_text())
    export = json.loads((folder / "export.json").read_text())
    # --- expected.yml
    want_keys = {"id", "title", "source", "error", "route", "crash", "origin", "root_cause_keywords", "notes"}
    if not want_keys <= set(exp):
        bad(cid, f"expected.yml lacks {want_keys - set(exp)}")
    extra = set(exp) - want_keys - {"alternatives", "noise", "introduced_by", "blamed_by"}
    if extra:
        bad(cid, f"expected.yml has unexpected keys {extra}")
    if exp["id"] != cid:
        bad(cid, "id != folder")
    src = exp["source"]
    if src["repository"] != "https://github.com/lobsters/lobsters" or src["license"] != "BSD-3-Clause":
        bad(cid, "source repository/license")
    for key in ("commit", "fix_commit"):
        if not re.fullmatch(r"[0-9a-f]{40}", src[key]):
            bad(cid, f"{key} not 40 hex")
    parent_of_fix = subprocess.run(GIT + ["rev-parse", src["fix_commit"] + "^"], capture_output=True, text=True).stdout.strip()
    if parent_of_fix != src["commit"]:
        bad(cid, "commit is not the fix's parent")
    if exp["route"] not in {"deep", "simple", "transient", "known"}:
        bad(cid, "route")
    lic = (code / "LICENSE").read_text()
    if "Redistribution and use in source and binary forms" not in lic:
        bad(cid, "LICENSE is not BSD")
    # --- vendored files byte-exact, count
    vendored = [p for p in code.rglob("*") if p.is_file() and ".git" not in p.relative_to(code).parts]
    if len(vendored) > 15:
        bad(cid, f"{len(vendored)} vendored files")
    for p in vendored:
        rel = p.relative_to(code).as_posix()
        blob = subprocess.run(GIT + ["show", f"{src['commit']}:{rel}"], capture_output=True, check=True).stdout
        if blob != p.read_bytes():
            bad(cid, f"{rel} differs from the commit")
    # --- export structure
    if set(export) != {"format", "account_id", "app_name", "exported_at", "errors", "details"}:
        bad(cid, f"export keys {set(export)}")
    if export["format"] != "nightwatch.nerdgraph-export/1" or export["app_name"] != "lobsters-production" \
            or export["exported_at"] != "2026-11-21T06:00:00Z" or not isinstance(export["account_id"], int):
        bad(cid, "export header")
    rows = results(export["errors"])
    row_keys = {"facet", "error.class", "transactionName", "occurrences", "message", "first_seen", "last_seen", "http_status"}
    for r in rows:
        if set(r) != row_keys:
            bad(cid, f"facet row keys {set(r) ^ row_keys}")
        if r["facet"] != [r["error.class"], r["transactionName"]]:
            bad(cid, "facet != [class, tx]")
        if not (LO <= r["first_seen"] <= r["last_seen"] <= HI):
            bad(cid, "first/last_seen outside the 24 h window")
    pairs = {(r["error.class"], r["transactionName"]) for r in rows}
    if (exp["error"]["error_class"], exp["error"]["transaction"]) not in pairs:
        bad(cid, "error row missing from export")
    for n in exp.get("noise") or []:
        noise_total.append((cid, n["error_class"]))
        if (n["error_class"], n["transaction"]) not in pairs:
            bad(cid, "noise row missing from export")
    if len(pairs) != 1 + len(exp.get("noise") or []):
        bad(cid, "export has rows that are neither the case error nor listed noise")
    details = export["details"]
    if {(d["error_class"], d["transaction"]) for d in details} != pairs:
        bad(cid, "details do not match facet rows")
    for d in details:
        if set(d) != {"error_class", "transaction", "transaction_errors", "error_traces"}:
            bad(cid, "detail keys")
        for s in results(d["transaction_errors"]):
            if not (LO <= s["timestamp"] <= HI):
                bad(cid, "sample timestamp outside window")
            if s["error.class"] != d["error_class"] or s["transactionName"] != d["transaction"]:
                bad(cid, "sample class/tx mismatch")
        traces = results(d["error_traces"])
        if len(traces) != 1 or not {"timestamp", "error.class", "error.message", "transactionName", "stackTrace"} <= set(traces[0]):
            bad(cid, "error_traces shape")
            continue
        t = traces[0]
        frames = parse_stack_trace(t["stackTrace"])
        if len(frames) != len([l for l in t["stackTrace"].split("\n") if not l.startswith("<internal:")]):
            bad(cid, f"parser read {len(frames)} of {len(t['stackTrace'].splitlines())} lines")
        def mine(f):
            return f.file.startswith(k["prefix"] + "/") and "/vendor/bundle/" not in f.file and "/gems/" not in f.file
        app = [f for f in frames if mine(f)]
        disagree = [f.file for f in frames if f.in_app != mine(f)]
        if disagree:
            print(f"  NOTE {cid} [{d['error_class']}]: nightwatch is_app_path disagrees on {len(disagree)} frames, e.g. {disagree[0]}")
        is_main = (d["error_class"], d["transaction"]) == (exp["error"]["error_class"], exp["error"]["transaction"])
        if d["error_class"] == "ActionController::RoutingError" and app:
            bad(cid, "routing noise has in-app frames")
        for f in app:
            if not f.file.startswith(k["prefix"] + "/"):
                bad(cid, f"in-app frame outside the deploy prefix: {f.file}")
                continue
            rel = f.file[len(k["prefix"]) + 1:]
            p = code / rel
            if not p.exists():
                bad(cid, f"in-app frame file not vendored: {rel}")
                continue
            n = len(p.read_text().splitlines())
            if not 1 <= f.line <= n:
                bad(cid, f"{rel}:{f.line} beyond {n} lines")
        if is_main:
            top = app[0]
            rel = top.file[len(k["prefix"]) + 1:]
            if (rel, top.line) != (exp["crash"]["file"], exp["crash"]["line"]):
                bad(cid, f"first in-app frame {rel}:{top.line} != crash")
            # the failing call is on the crash line, callers' lines call the next frame
            for path, line, snippet in k["app_frames"]:
                text = (code / path).read_text().splitlines()[line - 1]
                if snippet not in text:
                    bad(cid, f"{path}:{line} does not contain {snippet!r}: {text.strip()!r}")
    # --- origin / alternatives against the fix diff
    o = exp["origin"]
    of = code / o["file"]
    if not of.exists():
        bad(cid, "origin file not vendored")
    else:
        n = len(of.read_text().splitlines())
        a, b = o["lines"]
        if not (1 <= a <= b <= n):
            bad(cid, "origin lines outside file")
        hunks = old_hunks(src["commit"], src["fix_commit"], o["file"])
        if not any(h0 <= b and a <= h1 for h0, h1 in hunks):
            bad(cid, f"origin {a}-{b} overlaps no hunk of the fix in {o['file']} (hunks {hunks})")
    for alt in exp.get("alternatives") or []:
        p = code / alt["file"]
        if not p.exists() or not (1 <= alt["lines"][0] <= alt["lines"][1] <= len(p.read_text().splitlines())):
            bad(cid, f"alternative {alt} invalid")
    differs = (o["file"], ) != (exp["crash"]["file"], ) or not (o["lines"][0] <= exp["crash"]["line"] <= o["lines"][1])
    print(f"{cid:50s} crash {exp['crash']['file']}:{exp['crash']['line']:<5} origin {o['file']}:{o['lines']} "
          f"differs={differs} files={len(vendored)}")

if sorted(c for _, c in noise_total) != ["ActionController::RoutingError", "ActionController::UnknownFormat"] \
        or len({cid for cid, _ in noise_total}) != 2:
    problems.append(f"noise rows: {noise_total}")
print("\n".join(problems) if problems else "ALL CHECKS PASSED")
