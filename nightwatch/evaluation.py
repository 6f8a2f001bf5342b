"""`nightwatch eval`: replay known production errors as nights and score what each night concluded.

A case is a folder (see evals/README.md): the night's errors as a NerdGraph export and the answer key; its code is
its application's history at the case's commit, checked out of `<cases-dir>/apps/<app>/history.bundle`
(nightwatch.eval_apps). A folder that also holds the errors as the real sentry-sdk sent them
(`sentry_events.json`) is a second case, its Sentry twin (`<case>.sentry`): the same night read from Sentry's events,
scored by the same answer key. Each case runs as its own night on its own checkout and home,
through the same flow a scheduled night runs, so what is scored is what users get: path mapping, noise
rules, triage, the investigation, the fix gate. Scores are compared with a baseline; a check a case passed
there and fails now is a regression (exit 1). Running the night is the caller's job (the CLI passes the flow):
this module never imports Prefect.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from nightwatch import safe_yaml
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.eval_apps import (
    APPS,
    AppError,
    AppRepositories,
    FixCommitEntry,
    app_names,
    bundle_of,
    case_ref,
    load_app_trees,
)
from nightwatch.eval_apps import app_of as app_of_repository
from nightwatch.fingerprint import normalise_transaction
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, FileChange, Model, RunReport, TraceData, Window
from nightwatch.prompts import production_values
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.sources.sentry_file import SentryEventsFileSource
from nightwatch.trace_paths import PathMap, locate_frames, mapped_share
from nightwatch.verify.commit_tests import FixCommit, HarnessSettings

LINE_SLACK = 3  # a named line this close to the expected range counts as in range
TWIN = ".sentry"  # a case's Sentry twin is named <case>.sentry
SENTRY_EVENTS = "sentry_events.json"
# What the night shows the model, made by NightWatch's own code before any model reads it: the eval's gate. A case that
# passed one of these in the baseline and fails it now is a regression, whichever model runs.
SHOWN = ("selected", "paths", "crash_shown", "evidence", "values", "noise", "suspect", "suspect_top3", "blamed", "blamed_top3")
# What the model concluded from it: reported beside, never a gate (the offline model's rules would be fitted to the cases).
CONCLUDED = ("route", "crash", "origin", "line", "pr")
CHECKS = SHOWN + CONCLUDED


class EvalError(Exception):
    """A case folder or the baseline cannot be used; the message names the file and the problem."""


class Span(Model):
    file: str
    line: int | None = None
    lines: tuple[int, int] | None = None

    @property
    def range(self) -> tuple[int, int] | None:
        if self.lines:
            return min(self.lines), max(self.lines)
        return (self.line, self.line) if self.line else None

    def covers(self, file: str, line: int | None) -> bool:
        bounds = self.range
        return file == self.file and line is not None and bounds is not None and (
            bounds[0] - LINE_SLACK <= line <= bounds[1] + LINE_SLACK)


class CaseSource(Model):
    demo: bool = False
    repository: str = ""
    commit: str = ""
    fix_commit: str = ""
    license: str = ""


class CaseError(Model):
    error_class: str
    transaction: str


class DecidingValue(Model):
    """The value production held that decides the error, as the first message shows it where the SDK captured it
    (`text`), or why no SDK captures it (`why`: a row of another table, a setting, a request body it does not send)."""

    text: str = ""
    why: str = ""


class EvalCase(Model):
    id: str
    title: str = ""
    source: CaseSource
    error: CaseError
    route: str = "deep"
    crash: Span
    origin: Span
    alternatives: list[Span] = Field(default_factory=list)
    root_cause_keywords: list[str] = Field(default_factory=list)
    noise: list[CaseError] = Field(default_factory=list)
    regression_test: str = ""  # the test the real fix added, as its runner names it (pytest node id, Django label)
    introduced_by: str | None = None  # the commit most of the real fix's lines came from (scripts/history_slices.py)
    blamed_by: list[str] = Field(default_factory=list)  # every commit they came from, most lines first
    deciding_value: DecidingValue | None = None  # what a Sentry twin's first message must show, where the SDK has it
    notes: str = ""
    folder: Path = Path(".")
    monitor: Literal["newrelic", "sentry"] = "newrelic"  # which capture of the errors the night reads

    @property
    def blamed(self) -> list[str]:
        """The commits the real fix's lines came from, as SZZ reads a fix; the majority one alone where a case lists none."""
        return self.blamed_by or ([self.introduced_by] if self.introduced_by else [])

    @property
    def export(self) -> Path:
        return self.folder / (SENTRY_EVENTS if self.monitor == "sentry" else "export.json")

    def sentry_twin(self) -> "EvalCase | None":
        """The same case read from the events the real sentry-sdk sent, where the folder has them."""
        if self.monitor != "newrelic" or not (self.folder / SENTRY_EVENTS).is_file():
            return None
        return self.model_copy(update={"id": self.id + TWIN, "monitor": "sentry"})

    @property
    def origin_differs(self) -> bool:
        return self.origin.file != self.crash.file or not self.origin.covers(self.crash.file, self.crash.line)

    def fix_spans(self) -> list[Span]:
        return [self.origin, *self.alternatives]


class CaseScore(Model):
    """What one night concluded about one case; a check is None when it does not apply."""

    case: str
    route: str = ""
    route_expected: str = ""
    checks: dict[str, bool | None] = Field(default_factory=dict)
    pr: str = "none"  # opened | refused | none
    pr_reason: str = ""
    pr_file_right: bool | None = None
    frames_mapped: int = 0
    frames_in_app: int = 0
    refused_reads: int = 0
    keywords_found: int = 0
    keywords: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    iterations: int = 0
    seconds: float = 0.0
    suspects: list[str] = Field(default_factory=list)  # the night's suspect commits, by their real sha
    failure: str = ""


# cases ------------------------------------------------------------------------------------------------------


def load_cases(root: Path, names: list[str] | None = None) -> list[EvalCase]:
    """Every case folder under `root` (or the named ones), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        raise EvalError(f"no eval cases folder at {root}")
    folders = sorted(p for p in root.iterdir() if (p / "expected.yml").is_file())
    cases = [c for p in folders for c in _with_twin(load_case(p))]
    if names:
        known = {c.id for c in cases}
        if missing := [n for n in names if n not in known]:
            raise EvalError(f"no such case(s) in {root}: {', '.join(missing)}")
        cases = [c for c in cases if c.id in names]
    return cases


def _with_twin(case: EvalCase) -> list[EvalCase]:
    twin = case.sentry_twin()
    return [case, twin] if twin else [case]


def load_case(folder: Path) -> EvalCase:
    path = folder / "expected.yml"
    try:
        data = safe_yaml.safe_load(path.read_text(encoding="utf-8"))
        case = EvalCase.model_validate({**(data or {}), "folder": folder})
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise EvalError(f"{path}: {exc}") from exc
    if case.id != folder.name:
        raise EvalError(f"{path}: id {case.id!r} differs from its folder name {folder.name!r}")
    if not case.export.is_file():
        raise EvalError(f"{folder}: no export.json")
    return case


def exported_at(case: EvalCase) -> datetime:
    if case.monitor == "sentry":
        return SentryEventsFileSource(case.export).exported_at
    data = json.loads(case.export.read_text(encoding="utf-8"))
    moment = datetime.fromisoformat(str(data["exported_at"]).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


# repositories -----------------------------------------------------------------------------------------------


def prepare_repository(case: EvalCase, dest: Path, checkout: Path | None = None,
                       apps: AppRepositories | None = None) -> Path:
    """A git checkout of the case's code at `dest`: the demo application, the case's slice of its application's
    history (from `<cases-dir>/apps/<app>/history.bundle`, read once per run through `apps`), or `source.commit` of a
    local clone (`--repo`)."""
    if case.source.demo:
        from nightwatch.codehosts.demo_repo import materialize_demo_repo
        from nightwatch.runtime import DEMO_APP, DEMO_HISTORY

        return materialize_demo_repo(DEMO_APP, DEMO_HISTORY, dest, exported_at(case))
    if checkout is None:
        apps = apps or AppRepositories(case.folder.parent / APPS, dest.parent / ".apps")
        try:
            return apps.check_out(app_of(case), base_id(case), dest)
        except AppError as exc:
            raise EvalError(f"{exc}; or run with --repo pointing at a clone of {case.source.repository}") from exc
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    _extract_commit(Path(checkout), case.source.commit, dest)
    _commit_tree(dest, case)
    return dest


def base_id(case: EvalCase) -> str:
    """The case a Sentry twin is the twin of (a case itself otherwise): its history and fix refs are that case's."""
    return case.id.removesuffix(TWIN) if case.monitor == "sentry" else case.id


def _extract_commit(clone: Path, commit: str, dest: Path) -> None:
    if not commit:
        raise EvalError("the case names no source.commit to check out")
    archive = dest.parent / f".{dest.name}.tar"
    with archive.open("wb") as out:
        proc = subprocess.run(["git", "-C", str(clone), "archive", "--format=tar", commit], stdout=out, stderr=subprocess.PIPE,
                              check=False, timeout=300)
    if proc.returncode != 0:
        archive.unlink(missing_ok=True)
        raise EvalError(f"cannot check out {commit} from {clone}: {proc.stderr.decode(errors='replace').strip()[:300]}")
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()


def _commit_tree(root: Path, case: EvalCase) -> None:
    env = {"GIT_AUTHOR_NAME": "eval", "GIT_AUTHOR_EMAIL": "eval@nightwatch.invalid", "GIT_COMMITTER_NAME": "eval",
           "GIT_COMMITTER_EMAIL": "eval@nightwatch.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    import os

    full = {**os.environ, **env}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["commit", "-q", "--allow-empty", "-m", f"{case.id} at {case.source.commit or 'its commit'}"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=full, capture_output=True, timeout=120)


# scoring ----------------------------------------------------------------------------------------------------


def frame_mapping(case: EvalCase, repo: Path) -> tuple[int, int]:
    """(application frames found in the repository, application frames) of the case error's trace."""
    return mapped_share(case_error(case, repo)[1])


def case_error(case: EvalCase, repo: Path) -> tuple[ErrorGroup, TraceData]:
    """The case's error as its source reads it, with its trace's frames mapped to the checkout. New Relic's export
    names it by class and transaction; a Sentry twin's events by the class alone (Sentry's issue carries no module)
    and the line it was raised at, which must be the answer key's crash line, as on the New Relic capture."""
    source: Any = SentryEventsFileSource(case.export) if case.monitor == "sentry" else ExportFileSource(case.export)
    moment = exported_at(case)
    window = Window(start=datetime(1970, 1, 1, tzinfo=timezone.utc), end=moment.replace(year=moment.year + 1))
    paths = PathMap.of_host(LocalRepoHost(repo))
    for error in source.fetch_errors(window).errors:
        if case.monitor == "newrelic" and _is(error.error_class, error.transaction, case.error):
            return error, locate_frames(source.fetch_traces(error, window), paths)
        if case.monitor == "sentry" and _bare(error.error_class) == _bare(case.error.error_class):
            traces = locate_frames(source.fetch_traces(error, window), paths)
            top = next((f for f in traces.stack_frames if f.in_app), None)
            if top and (top.file, top.line) == (case.crash.file, case.crash.line):
                return error, traces
    where = "" if case.monitor == "newrelic" else f" raised at {case.crash.file}:{case.crash.line}"
    raise EvalError(f"{case.export}: no error {case.error.error_class} in {case.error.transaction}{where}")


def _bare(error_class: str) -> str:
    """`builtins:KeyError`, `django.db.utils.OperationalError` and `KeyError` name one class: KeyError."""
    return re.split(r"[:.]", error_class)[-1]


def _is(error_class: str, transaction: str, expected: CaseError) -> bool:
    return error_class == expected.error_class and normalise_transaction(transaction) == normalise_transaction(expected.transaction)


def _result_of(case: EvalCase, report: RunReport, fingerprint: str | None) -> ErrorAnalysisResult | None:
    if fingerprint is not None:
        return next((r for r in report.results if r.fingerprint == fingerprint), None)
    return next((r for r in report.results if _is(r.error.error_class, r.error.transaction, case.error)), None)


def score(case: EvalCase, report: RunReport, mapped: tuple[int, int], seconds: float, repo: Path | None = None,
          fingerprint: str | None = None) -> CaseScore:
    """The night's verdict on the case's error: the one of `fingerprint` where given (a Sentry twin's), else the one
    of the case's class and transaction."""
    result = _result_of(case, report, fingerprint)
    out = CaseScore(case=case.id, route_expected=case.route, frames_mapped=mapped[0], frames_in_app=mapped[1],
                    keywords=len(case.root_cause_keywords), seconds=round(seconds, 1))
    out.checks["noise"] = _noise_dropped(case, report)
    out.checks["paths"] = mapped[0] == mapped[1]
    out.checks["selected"] = result is not None
    if result is None:
        out.failure = "the night did not analyse this error (dropped or not selected)"
        out.checks.update({c: False for c in ("route", "crash", "origin", "line", "pr")})
        return out
    out.route = result.verdict.route if result.verdict else result.source
    out.tokens, out.cost_usd, out.iterations = result.tokens.total, round(result.cost_usd, 6), result.iterations
    out.refused_reads = sum(1 for c in result.tool_calls if c.name == "read_file" and not c.ok)
    out.failure = result.failure or ""
    out.checks["route"] = out.route == case.route
    if case.route == "transient" and out.checks["route"]:
        out.checks.update({"crash": None, "origin": None, "line": None, "pr": None})  # rightly reported, not investigated
        return out
    _score_analysis(case, result, out)
    _score_pr(case, result, report, out, repo)
    _score_suspects(case, result, out, repo)
    return out


def _score_suspects(case: EvalCase, result: ErrorAnalysisResult, out: CaseScore, repo: Path | None) -> None:
    """With no model: is the commit that introduced the error (the case's ground truth: the commit most of the real
    fix's lines came from) the first suspect, or in the top three? And, read as SZZ reads a fix, is one of the commits
    any of its lines came from (`blamed`)? Only where the case records its history (a slice's commits name the real
    ones in a trailer)."""
    if not case.introduced_by or repo is None:
        return
    named = [_original_commit(repo, s.sha) for s in result.suspect_commits]
    out.suspects = [n[:12] for n in named]
    out.checks["suspect"] = bool(named) and named[0] == case.introduced_by
    out.checks["suspect_top3"] = case.introduced_by in named[:3]
    blamed = set(case.blamed)
    out.checks["blamed"] = bool(named) and named[0] in blamed
    out.checks["blamed_top3"] = bool(blamed.intersection(named[:3]))


def _original_commit(repo: Path, sha: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%(trailers:key=Original-Commit,valueonly)", sha],
                          capture_output=True, text=True, check=False, timeout=60)
    return proc.stdout.strip() or sha


def evidence_recall(case: EvalCase, research: dict[str, Any] | None) -> bool | None:
    """Were the real fix's file and lines already in the night's first message (a preview that shows them)?"""
    if research is None or not case.source.repository:
        return None
    first, last = case.origin.range or (0, 0)
    return bool(_previewed(research, case.origin.file) & set(range(first, last + 1)))


def crash_shown(case: EvalCase, research: dict[str, Any] | None) -> bool | None:
    """Was the crash line (the answer key's first in-app frame) in the night's first message, in its file's preview?"""
    if research is None or not case.crash.line:
        return None if research is None else False
    return case.crash.line in _previewed(research, case.crash.file)


def _previewed(research: dict[str, Any], path: str) -> set[int]:
    """The line numbers of `path` the first message's preview of it shows."""
    previews: dict[str, str] = research.get("file_previews", {})
    return {int(m) for m in re.findall(r"^\s*(\d+)\| ", previews.get(path, ""), flags=re.M)}


def _research_of(case: EvalCase, home: Path, fingerprint: str | None = None) -> dict[str, Any] | None:
    for stash in sorted(home.glob("runs/*/triage-inputs.json")):
        night = json.loads(stash.read_text(encoding="utf-8"))
        for error, research in zip(night.get("errors", []), night.get("research", [])):
            if error.get("fingerprint") == fingerprint if fingerprint else _is(error["error_class"], error["transaction"], case.error):
                return research
    return None


def _score_analysis(case: EvalCase, result: ErrorAnalysisResult, out: CaseScore) -> None:
    analysis = result.analysis
    if analysis is None:
        out.checks.update({"crash": False, "origin": False, "line": False})
        return
    text = " ".join([analysis.title, analysis.root_cause, analysis.reasoning]).lower()
    named = {loc.file for loc in (analysis.crash_site, analysis.origin) if loc} | {c.path for c in analysis.file_changes}
    out.checks["crash"] = case.crash.file in named or case.crash.file.lower() in text
    spans = case.fix_spans()
    out.checks["origin"] = any(s.file in named or s.file.lower() in text for s in spans)
    claimed = analysis.origin or analysis.crash_site
    out.checks["line"] = bool(claimed) and any(s.covers(claimed.file, claimed.line) for s in spans)  # type: ignore[union-attr]
    out.keywords_found = sum(1 for k in case.root_cause_keywords if k.lower() in text)


def _score_pr(case: EvalCase, result: ErrorAnalysisResult, report: RunReport, out: CaseScore, repo: Path | None) -> None:
    pr = report.pr if report.pr and report.pr.fingerprint == result.fingerprint else None
    changes = result.analysis.file_changes if result.analysis else []
    if pr is None:
        out.pr, out.pr_reason = "none", "no fix proposed" if not changes else "another error's fix was chosen"
    elif pr.action in ("created", "exists"):
        out.pr = "opened"
    else:
        out.pr, out.pr_reason = "refused", pr.reason.removeprefix("no PR: ")
    if out.pr == "opened":
        out.pr_file_right = all(_touches_a_fix_span(case, c, repo) for c in changes)
    out.checks["pr"] = out.pr != "opened" or bool(out.pr_file_right)


def _touches_a_fix_span(case: EvalCase, change: FileChange, repo: Path | None) -> bool:
    """The change edits a file the real fix edited, at lines the real fix changed (when the checkout can tell)."""
    spans = [s for s in case.fix_spans() if s.file == change.path]
    if not spans or repo is None or not change.before:
        return bool(spans)
    try:
        text = (repo / change.path).read_text(encoding="utf-8")
    except OSError:
        return False
    start = text.find(change.before)
    if start < 0:
        return False
    first = text.count("\n", 0, start) + 1
    lines = range(first, first + max(1, change.before.count("\n") + (not change.before.endswith("\n"))))
    return any(s.covers(change.path, n) for s in spans for n in lines)


def _noise_dropped(case: EvalCase, report: RunReport) -> bool | None:
    if not case.noise:
        return None
    if case.monitor == "sentry":  # Sentry names a class alone, and a route where New Relic names a handler
        analysed = [r for r in report.results if any(_bare(r.error.error_class) == _bare(n.error_class) for n in case.noise)]
    else:
        analysed = [r for r in report.results if any(_is(r.error.error_class, r.error.transaction, n) for n in case.noise)]
    return not analysed and report.errors_ignored >= len(case.noise)


# running ----------------------------------------------------------------------------------------------------

NightRunner = Callable[[EvalCase, Path, Path], RunReport]  # (case, checkout, home) -> the night's report


def failed(case: EvalCase, why: str) -> CaseScore:
    """A case whose night did not end: every check fails, with the reason."""
    out = CaseScore(case=case.id, route_expected=case.route, failure=why)
    out.checks.update({c: False for c in CHECKS})
    return out


def run_case(case: EvalCase, workdir: Path, run_night: NightRunner, checkout: Path | None = None) -> CaseScore:
    """One case as one night in its own home and checkout, both new: an earlier eval's knowledge, cached results or
    metrics in the same workdir would answer for the code being measured."""
    home = workdir / case.id
    if home.exists():
        shutil.rmtree(home)
    try:
        repo = prepare_repository(case, home / "repo", checkout, AppRepositories(case.folder.parent / APPS, workdir / APPS))
    except EvalError as exc:  # a case whose code cannot be read is a scored failure; the other cases still run
        return failed(case, str(exc))
    started = time.monotonic()
    try:
        report = run_night(case, repo, home)
    except Exception as exc:  # noqa: BLE001 - a crashed night is a scored failure, never a crashed eval
        return failed(case, f"the night crashed: {str(exc)[:300]}")
    seconds = time.monotonic() - started
    (home / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")  # for a reader of the scores
    error, traces = case_error(case, repo)
    fingerprint = error.fingerprint if case.monitor == "sentry" else None
    out = score(case, report, mapped_share(traces), seconds, repo, fingerprint)
    research = _research_of(case, home, fingerprint)  # the night's first message, read once for both checks
    out.checks["evidence"] = evidence_recall(case, research)
    out.checks["crash_shown"] = crash_shown(case, research)
    out.checks["values"] = values_shown(case, traces)
    return out


def values_shown(case: EvalCase, traces: TraceData) -> bool | None:
    """Does the first message show the value that decides the error (a Sentry twin whose SDK captured it)?"""
    if case.monitor != "sentry" or case.deciding_value is None or not case.deciding_value.text:
        return None
    return case.deciding_value.text in production_values(traces)


# summary and baseline ---------------------------------------------------------------------------------------


def summary(scores: list[CaseScore], cases: list[EvalCase]) -> dict[str, Any]:
    by_id = {c.id: c for c in cases}
    differs = [s for s in scores if by_id[s.case].origin_differs]
    out: dict[str, Any] = {"cases": len(scores)}
    for check in CHECKS:
        applicable = [s for s in scores if s.checks.get(check) is not None]
        out[check] = f"{sum(1 for s in applicable if s.checks[check])}/{len(applicable)}"
    out["origin_where_it_differs"] = f"{sum(1 for s in differs if s.checks.get('origin') and s.checks.get('line'))}/{len(differs)}"
    out["frames_mapped"] = f"{sum(s.frames_mapped for s in scores)}/{sum(s.frames_in_app for s in scores)}"
    out["refused_reads"] = sum(s.refused_reads for s in scores)
    out["prs_opened"] = sum(1 for s in scores if s.pr == "opened")
    out["prs_refused"] = sum(1 for s in scores if s.pr == "refused")
    out["tokens"] = sum(s.tokens for s in scores)
    out["cost_usd"] = round(sum(s.cost_usd for s in scores), 4)
    out["iterations"] = sum(s.iterations for s in scores)
    out["seconds"] = round(sum(s.seconds for s in scores), 1)
    return out


def baseline_of(scores: list[CaseScore]) -> dict[str, dict[str, bool]]:
    return {s.case: {k: v for k, v in sorted(s.checks.items()) if v is not None} for s in sorted(scores, key=lambda s: s.case)}


def load_baseline(path: Path) -> dict[str, dict[str, bool]]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvalError(f"baseline {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cases"), dict):
        raise EvalError(f"baseline {path} must be an object with a 'cases' object")
    return data["cases"]


def regressions(scores: list[CaseScore], baseline: dict[str, dict[str, bool]], checks: tuple[str, ...] = SHOWN) -> list[str]:
    """Each of `checks` (by default the gate: what the night shows the model) a case passed in the baseline and fails
    now."""
    found = []
    for s in scores:
        for check, passed in baseline.get(s.case, {}).items():
            if check in checks and passed and s.checks.get(check) is False:
                found.append(f"{s.case}: {check} passed in the baseline and fails now")
    return found


def write_baseline(path: Path, scores: list[CaseScore], model: str) -> None:
    data = {"model": model, "cases": baseline_of(scores)}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# the fix commits' own tests ---------------------------------------------------------------------------------

FIX_TESTS_CLAIM = "fail at the parent with the production class, pass at the fix"


class FixTestItem(FixCommitEntry):
    """One real fix commit `--fix-tests` checks: an eval case's (`kind` eval) or a yml's harness-only one (harness)."""

    app: str
    repository: str
    kind: str  # eval | harness


class FixTestRun(Model):
    side: str  # parent | fix
    commit: str  # the real commit (the synthesized commit's Original-Commit)
    outcome: str
    seconds: float


class FixTestScore(Model):
    """One case's real fix commit, its own regression test run at the parent and at the fix (check_fix_commit)."""

    case: str
    app: str
    test: str
    error_class: str
    verdict: str
    kind: str = "eval"  # eval: an eval case's real fix; harness: a fix commit of <app>.yml's fix_commits (no night)
    detail: str
    environment: str = ""
    setup_seconds: float = 0.0
    runs: list[FixTestRun] = Field(default_factory=list)
    logs: str = ""  # the folder holding each run's output
    note: str = ""  # the app yml's word on this case

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"


def app_of(case: EvalCase) -> str:
    """The application a case comes from, as its folder under apps/ is named."""
    return app_of_repository(case.source.repository)


def fix_test_cases(cases: list[EvalCase]) -> list[EvalCase]:
    """The cases whose real fix added a regression test the harness can run at the parent and at the fix; a Sentry
    twin's fix is its case's, checked once (as the case, where only the twin is named)."""
    fixes: dict[str, EvalCase] = {}
    for c in cases:
        if c.regression_test and c.source.fix_commit and c.source.commit and not c.source.demo:
            case = c.model_copy(update={"id": c.id.removesuffix(TWIN), "monitor": "newrelic"}) if c.monitor == "sentry" else c
            fixes.setdefault(case.id, case)
    return list(fixes.values())


def fix_test_items(cases: list[EvalCase], apps_dir: Path) -> list[FixTestItem]:
    """What --fix-tests checks: the fix of each of `cases` that added a regression test, then every harness-only fix
    commit of every application's app.yml under `apps_dir` (they have no night, so they do not depend on the cases)."""
    items = []
    try:
        for case in fix_test_cases(cases):
            app = app_of(case)
            items.append(FixTestItem(id=case.id, app=app, repository=case.source.repository, kind="eval",
                                     parent=case.source.commit, fix=case.source.fix_commit, test=case.regression_test,
                                     error_class=case.error.error_class, crash_file=case.crash.file,
                                     note=load_app_trees(apps_dir, app).cases.get(case.id, "")))
        for app in app_names(apps_dir):
            trees = load_app_trees(apps_dir, app)
            items += [FixTestItem(**f.model_dump(), app=app, repository=trees.repository, kind="harness")
                      for f in trees.fix_commits]
    except AppError as exc:
        raise EvalError(str(exc)) from exc
    ids = [i.id for i in items]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        raise EvalError(f"{apps_dir}: fix commit id(s) used twice (their refs would collide): {', '.join(twice)}")
    return items


def run_fix_tests(items: list[FixTestItem], apps_dir: Path, workdir: Path, home: Path,
                  say: Callable[[str], None] = lambda _line: None) -> list[FixTestScore]:
    """Each real fix commit (fix_test_items) checked through the sandbox: its regression test at the parent (with the
    fix's test files) must fail with the production error class, and pass at the fix. The trees come from the app's
    bundle, read once into `workdir`; the test environments are made under `home` (and reused from there)."""
    repositories = AppRepositories(apps_dir, workdir / APPS)
    scores = []
    for item in items:
        out = FixTestScore(case=item.id, app=item.app, kind=item.kind, test=item.test, error_class=item.error_class,
                           verdict="not run", detail="", note=item.note)
        scores.append(out)
        try:
            trees = load_app_trees(apps_dir, item.app)
            repo = repositories.repository(item.app)
            parent, fix = (repositories.resolve(item.app, case_ref(item.id, side)) for side in ("parent", "fix"))
        except AppError as exc:
            out.detail = str(exc)
            continue
        if not parent or not fix:
            out.detail = f"{bundle_of(apps_dir, item.app)} has no {case_ref(item.id, 'parent' if not parent else 'fix')} " \
                         "(write the bundles again: scripts/fix_trees.py)"
            continue
        say(f"eval: fix test of {item.id} ({item.test})")
        _fix_test(out, item, FixCommit(repo, parent, fix, item.test, item.error_class, item.crash_file),
                  HarnessSettings(home, setup=trees.setup, command=trees.command), workdir / "fix-tests" / item.id)
        say(f"eval: {item.id}: {out.verdict} ({out.detail[:160]})")
    return scores


def _fix_test(out: FixTestScore, item: FixTestItem, commit: FixCommit, settings: HarnessSettings, logs: Path) -> None:
    """Run one fix test into `out`; each side's output (and a failed set-up's) kept in `logs`."""
    from nightwatch.verify.commit_tests import check_fix_commit

    result = check_fix_commit(commit, settings)
    logs.mkdir(parents=True, exist_ok=True)
    originals = {commit.parent: item.parent, commit.fix: item.fix}
    for side, run in zip(("parent", "fix"), result.runs):
        (logs / f"{side}.log").write_text(run.output, encoding="utf-8")
        out.runs.append(FixTestRun(side=side, commit=originals.get(run.commit, run.commit), outcome=run.outcome,
                                   seconds=run.seconds))
    if result.setup_output:
        (logs / "setup.log").write_text(result.setup_output, encoding="utf-8")
    out.verdict, out.detail, out.environment = result.verdict, result.detail, result.environment
    out.setup_seconds, out.logs = result.setup_seconds, str(logs)


def fix_tests_summary(scores: list[FixTestScore]) -> str:
    return f"{sum(1 for s in scores if s.holds)}/{len(scores)} hold"
