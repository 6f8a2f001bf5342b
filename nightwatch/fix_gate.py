"""The checks a proposed fix passes before it becomes a draft PR, and what each found.

1. confidence: the analysis clears NIGHTWATCH_PR_MIN_CONFIDENCE.
2. applies: every edit applies exactly once to the default branch's current files (fix.validate_fix).
3. parses: each changed file still parses: Python with `ast`, Ruby with `ruby -c` where a Ruby is installed
   (else the check says it could not run), JavaScript with `node --check` where Node is installed.
4. not symptom-only: a patch that only silences the crash line (safe navigation, `try`, `rescue nil`, a bare nil
   guard) while the same receiver is used unguarded elsewhere in the method raises again on the next line; it
   stays in the issue with the reason, never a PR.

A check that fails refuses the PR; the PR body and the issue list every check, those that could not run too.
"""

from __future__ import annotations

import ast
import shutil
import subprocess

from nightwatch.fix import FixRejected, ValidatedFix, confidence_gate, fix_digest, validate_fix
from nightwatch.models import Analysis, FixCheck, FixGate, TraceData
from nightwatch.symptom_patch import Crash, symptom_only_reason

PARSE_TIMEOUT_S = 20.0


def crash_site(traces: TraceData | None) -> Crash | None:
    """The first application frame found in the repository: where the error was raised."""
    frame = next((f for f in (traces.stack_frames if traces else []) if f.in_app and f.located), None)
    return Crash(frame.file, frame.line) if frame else None


def check_fix(analysis: Analysis, host: object, min_confidence: str, crash: Crash | None,
              failed_fixes: dict[str, str] | None = None) -> tuple[FixGate, ValidatedFix | None]:
    """Every check of the gate, and the validated fix when it applies. `failed_fixes`: digest -> what happened to a fix
    of this error that was merged and did not hold (regressed, reverted); the same change is never proposed again."""
    checks = [_confidence(analysis, min_confidence)]
    if failed_fixes:
        failed = failed_fixes.get(fix_digest(analysis.file_changes))
        checks.append(FixCheck(name="not a failed fix", status="failed", detail=f"the same change {failed}") if failed else
                      FixCheck(name="not a failed fix", status="passed",
                               detail=f"differs from the {len(failed_fixes)} fix(es) of this error that did not hold"))
    try:
        fix = validate_fix(analysis, host)  # type: ignore[arg-type]
    except FixRejected as exc:
        checks.append(FixCheck(name="applies", status="failed", detail=str(exc)))
        return FixGate(checks=checks), None
    branch = _branch(host)
    checks.append(FixCheck(name="applies", status="passed",
                           detail=f"{len(analysis.file_changes)} edit(s) apply exactly to {branch or 'the current files'}"))
    checks += [parse_check(path, text) for path, text in sorted(fix.changes.items())]
    checks.append(_symptom_check(analysis, fix, crash))
    return FixGate(checks=checks), fix


def _confidence(analysis: Analysis, minimum: str) -> FixCheck:
    refused = confidence_gate(analysis, minimum)
    if refused:
        return FixCheck(name="confidence", status="failed", detail=refused)
    return FixCheck(name="confidence", status="passed", detail=f"{analysis.confidence} (minimum {minimum})")


def _branch(host: object) -> str:
    try:
        return str(host.default_branch())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - only a label
        return ""


def parse_check(path: str, text: str) -> FixCheck:
    """Whether the changed file still parses, or why that could not be checked."""
    name = f"parses: {path}"
    if path.endswith((".py", ".pyi")):
        try:
            ast.parse(text, filename=path)
        except SyntaxError as exc:
            return FixCheck(name=name, status="failed", detail=f"Python syntax error at line {exc.lineno}: {exc.msg}")
        except (ValueError, RecursionError, MemoryError) as exc:  # a null byte; nesting past what the parser takes
            return FixCheck(name=name, status="failed", detail=f"Python cannot parse it: {type(exc).__name__}")
        return FixCheck(name=name, status="passed", detail="Python ast")
    if path.endswith((".rb", ".rake", ".ru", ".gemspec")) or path.endswith("Gemfile"):
        return _external(name, ["ruby", "-c"], text, "Ruby")
    if path.endswith((".js", ".mjs", ".cjs")):
        return _external(name, ["node", "--check", "-"], text, "Node")
    return FixCheck(name=name, status="not_checked", detail="no parser for this file type")


def _external(name: str, command: list[str], text: str, runtime: str) -> FixCheck:
    if shutil.which(command[0]) is None:
        return FixCheck(name=name, status="not_checked", detail=f"{runtime} is not installed where NightWatch runs")
    try:
        proc = subprocess.run(command, input=text, capture_output=True, text=True, timeout=PARSE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return FixCheck(name=name, status="not_checked", detail=f"{command[0]} could not run: {exc}")
    if proc.returncode != 0:
        output = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        first = next((line for line in output if "rror" in line), output[0] if output else "syntax error")
        return FixCheck(name=name, status="failed", detail=f"{' '.join(command[:2])}: {first[:300]}")
    return FixCheck(name=name, status="passed", detail=" ".join(command[:2]))


def _symptom_check(analysis: Analysis, fix: ValidatedFix, crash: Crash | None) -> FixCheck:
    reason = symptom_only_reason(analysis.file_changes, fix.changes, crash)
    if reason:
        return FixCheck(name="not symptom-only", status="failed", detail=reason)
    return FixCheck(name="not symptom-only", status="passed", detail="no guard that leaves the same receiver unguarded")
