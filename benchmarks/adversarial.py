"""How NightWatch fares against hostile input: cases tried, leaks, PRs refused, hangs, nights lost.

    .venv/bin/python benchmarks/adversarial.py [--json] [--hang-s 10]

- secrets: every planted secret of tests/adversarial (each format, in each context: an error message, a
  stack trace, a repository file read by the agent's tools) through the product's redaction; a leak is
  any 8-character run of the secret that survives.
- injections: a model or error text steering tools or a fix (tests/adversarial/cases.py): a PR that
  would open, or a secret a tool would serve, is a failure.
- bad inputs: crafted rows and damaged state: a case running past --hang-s is a hang, an exception that
  escapes is a lost night.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nightwatch.redact import clean, redact  # noqa: E402
from tests.adversarial.cases import BAD_INPUTS, INJECTIONS, Case, Outcome, run_case  # noqa: E402
from tests.adversarial.corpus import formats, lookalikes, windows  # noqa: E402


def leaks_after_redaction() -> dict:
    """Every planted secret through redact() and through clean() cut in the middle of the secret; look-alikes kept."""
    planted = formats()
    leaked: dict[str, str] = {}
    for p in planted:
        cut = p.text.find(p.secret) + len(p.secret) // 2
        for how, out in (("redact", redact(p.text)), ("clean, cut mid-secret", clean(p.text, max(cut, 16))[0])):
            if any(w in out for w in windows(p.secret)):
                leaked[f"{p.name} ({p.context}, {how})"] = out[:160]
    mangled = [a.name for a in lookalikes() if redact(a.text) != a.text]
    return {"formats": len({p.name for p in planted}), "tried": 2 * len(planted), "leaks": len(leaked), "leaked": leaked,
            "lookalikes": len(lookalikes()), "lookalikes_mangled": mangled}


def timed(case: Case, root: Path, hang_s: float) -> tuple[Outcome | None, float]:
    """The case's outcome and seconds, or None when it ran past `hang_s` (a hang)."""
    box: list[Outcome] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: box.append(run_case(case, root)), daemon=True)
    worker.start()
    worker.join(hang_s)
    return (box[0] if box else None), time.monotonic() - started


def run_group(cases: list[Case], root: Path, hang_s: float) -> dict:
    rows = []
    for case in cases:
        outcome, seconds = timed(case, root, hang_s)
        rows.append({"case": case.name, "seconds": round(seconds, 3), "hang": outcome is None,
                     "held": bool(outcome and outcome.held), "lost": bool(outcome and outcome.detail.startswith("night lost")),
                     "detail": outcome.detail if outcome else f"still running after {hang_s:g} s"})
    return {"tried": len(rows), "held": sum(r["held"] for r in rows), "hangs": sum(r["hang"] for r in rows),
            "nights_lost": sum(r["lost"] for r in rows), "slowest_s": max((r["seconds"] for r in rows), default=0), "cases": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--hang-s", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        secrets = leaks_after_redaction()
        injections = run_group(INJECTIONS, root, args.hang_s)
        bad = run_group(BAD_INPUTS, root, args.hang_s)
    refused = sum(1 for r in injections["cases"] if r["held"] and r["case"].startswith(("fix", "low", "medium")))
    prs = sum(1 for c in INJECTIONS if c.name.startswith(("fix", "low", "medium")))
    summary = {
        "cases_tried": secrets["tried"] + injections["tried"] + bad["tried"],
        "secret_formats": secrets["formats"], "secret_placements": secrets["tried"], "leaks": secrets["leaks"],
        "lookalikes_mangled": f"{len(secrets['lookalikes_mangled'])} of {secrets['lookalikes']}",
        "injections": injections["tried"], "injections_held": injections["held"], "prs_refused": f"{refused} of {prs}",
        "bad_inputs": bad["tried"], "hangs": injections["hangs"] + bad["hangs"],
        "nights_lost": injections["nights_lost"] + bad["nights_lost"], "slowest_bad_input_s": bad["slowest_s"],
    }
    if args.json:
        print(json.dumps({"summary": summary, "secrets": secrets, "injections": injections, "bad_inputs": bad}, indent=2))
        return
    for key, value in summary.items():
        print(f"{key:<22} {value}")
    failures = [r for group in (injections, bad) for r in group["cases"] if not r["held"]]
    failures += [{"case": f"leak: {name}", "detail": where} for name, where in secrets["leaked"].items()]
    if failures:
        print("\nnot held:")
        for row in failures:
            print(f"  - {row['case']}: {row['detail']}")


if __name__ == "__main__":
    main()
