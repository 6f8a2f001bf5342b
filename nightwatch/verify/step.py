"""Step 8.5's verification: each chosen analysis with a regression test or a fix, through the verifier, side by side
(the sandbox runs wait on the application's tests, which a second one overlaps); and what the fix gate makes of it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from nightwatch.models import (
    CONFIDENCE_RANK,
    Analysis,
    ErrorAnalysisResult,
    ErrorGroup,
    FixCheck,
    FixGate,
    RegressionTest,
    TraceData,
    Verification,
)
from nightwatch.verify.reproduce import CrashSite
from nightwatch.verify.verifier import for_model

JOBS = 2


def crash_of(result: ErrorAnalysisResult, traces: TraceData | None) -> CrashSite:
    """The production error as a test must show it: its class and the first application frame of the repository."""
    frame = next((f for f in (traces.stack_frames if traces else []) if f.in_app and f.located), None)
    analysis = result.analysis
    if frame is None and analysis and analysis.crash_site:
        return CrashSite(result.error.error_class, analysis.crash_site.file, analysis.crash_site.line)
    return CrashSite(result.error.error_class, frame.file if frame else "", frame.line if frame else None,
                     (frame.method or None) if frame else None)


def verify_results(chosen: list[ErrorAnalysisResult], verifier, traces: dict[str, TraceData]) -> dict[str, Verification]:
    """fingerprint -> verification, for every chosen analysis that has a regression test or a fix."""
    todo = [r for r in chosen if r.analysis and (r.analysis.regression_test or (r.analysis.has_fix and r.analysis.file_changes))]
    if not todo:
        return {}
    with ThreadPoolExecutor(max_workers=JOBS, thread_name_prefix="verify") as pool:
        done = pool.map(lambda r: verifier.verify(r.analysis, crash_of(r, traces.get(r.fingerprint))), todo)
        return {r.fingerprint: v for r, v in zip(todo, done)}


def verified_first(chosen: list[ErrorAnalysisResult]) -> list[ErrorAnalysisResult]:
    """Regressions stay first; then a verified fix goes before what was not shown to work, so the night's limited
    issues carry the proof it has."""
    return sorted(chosen, key=lambda r: (not r.regression, not (r.verification and r.verification.status == "verified")))


def verified_check(verification: Verification | None, required: bool) -> FixCheck:
    """The gate's `verified` check: failed when a verified fix is required and this one is not."""
    if verification is None:
        return FixCheck(name="verified", status="failed" if required else "not_checked", detail="no verification ran")
    if verification.status == "verified":
        return FixCheck(name="verified", status="passed", detail=verification.reason)
    status = "failed" if required else "not_checked"
    suffix = " (NIGHTWATCH_PR_REQUIRE_VERIFIED)" if required else ""
    return FixCheck(name="verified", status=status, detail=f"{verification.line}{suffix}")


def with_verification(gate: FixGate, analysis: Analysis, verification: Verification | None, minimum: str,
                      required: bool) -> FixGate:
    """The gate with its `verified` check. A verified fix counts one confidence rank higher: a test that fails as
    production did and passes with the fix is evidence the model's own confidence did not have."""
    checks = list(gate.checks)
    if verification is not None and verification.status == "verified":
        raised = CONFIDENCE_RANK[analysis.confidence] + 1 >= CONFIDENCE_RANK.get(minimum, CONFIDENCE_RANK["high"])
        checks = [FixCheck(name=c.name, status="passed", detail=f"{analysis.confidence}, raised one rank by the verified "
                           f"regression test (minimum {minimum})") if c.name == "confidence" and c.status == "failed" and raised
                  else c for c in checks]
    return FixGate(checks=[*checks, verified_check(verification, required)])


def tester_for(verifier, error: ErrorGroup, traces: TraceData) -> Callable[[str, str, str], str] | None:
    """The run_test tool of one investigation, or None where the night cannot run the application's tests."""
    if verifier.unavailable is not None:
        return None
    crash = crash_of(ErrorAnalysisResult(run_id="", error=error), traces)

    def run_test(path: str, content: str, test: str = "") -> str:
        run, verdict = verifier.run_test(RegressionTest(path=path, content=content, test=test), crash)
        return for_model(run, verdict)
    return run_test
