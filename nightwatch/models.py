"""Domain models shared by every stage of a night.

Plain pydantic v2 models: they serialise to JSON for Prefect results, Parquet rows and the
RunReport, and they validate whatever crosses a boundary (NerdGraph, the model, the knowledge base).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, computed_field, model_validator

from nightwatch import clock
from nightwatch.fingerprint import fingerprint_of
from nightwatch.redact import printable

Confidence = Literal["high", "medium", "low"]
CONFIDENCE_RANK: dict[str, int] = {"high": 3, "medium": 2, "low": 1}  # higher is more trusted
Severity = Literal["critical", "high", "medium", "low"]
Complexity = Literal["simple", "moderate", "complex"]
Category = Literal["code_bug", "config", "dependency", "infra", "transient", "unknown"]
Route = Literal["known", "transient", "simple", "deep"]
SourceState = Literal["live", "offline", "misconfigured"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _storable(value: object) -> object:
    """Production text that every writer can store: lone surrogates and NUL/control characters replaced.

    One crafted error (a NUL in its class, a lone surrogate in its message) must cost a replacement
    character, never the night: Parquet, YAML and JSON writers refuse such strings.
    """
    return printable(value)[0] if isinstance(value, str) else value


StorableText = Annotated[str, BeforeValidator(_storable)]


class Window(Model):
    """The lookback window of a night: [start, end). `end` is anchored so a rerun sees the same window."""

    start: datetime
    end: datetime

    @classmethod
    def ending_at(cls, end: datetime, since: timedelta) -> "Window":
        return cls(start=end - since, end=end)

    @property
    def key(self) -> str:
        return f"{self.start:%Y%m%dT%H%M}-{self.end:%Y%m%dT%H%M}"

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600


_ROUTE = re.compile(r"^(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /")


def is_web_transaction(name: str) -> bool:
    """A web request's transaction: New Relic's web transactions, or a route (`/books/{isbn}`, `GET /books`) as
    Sentry's SDKs name a request's transaction."""
    return name.startswith(("Controller/", "WebTransaction/", "Api/", "Web/", "/")) or bool(_ROUTE.match(name))


class ErrorGroup(Model):
    """One production error: an error class in a transaction, with its occurrence count."""

    error_class: StorableText
    transaction: StorableText
    message: StorableText = ""
    occurrences: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    app_name: StorableText = ""
    http_status: int | None = None
    rank_score: float = 0.0
    # Where the source says (Sentry and the trackers that speak its API; New Relic does not):
    users: int | None = Field(default=None, description="Users affected in the window.")
    level: StorableText = Field(default="", description="The level the application reported it at: fatal, error, "
                                                        "warning, info, debug.")
    handled: bool | None = Field(default=None, description="False: nothing caught it (it reached the framework or the "
                                                           "process); True: the application caught it and reported it.")
    issue_id: StorableText = Field(default="", description="The tracker's own id of this error (a Sentry issue).")
    url: StorableText = Field(default="", description="Where a person reads it in the tracker.")
    first_release: StorableText = Field(default="", description="The release the tracker first saw it in, where it "
                                                                "says (Sentry's firstRelease).")
    tracker_status: StorableText = Field(default="", description="What the team did with it in the tracker: resolved, "
                                                                 "ignored, regressed, unresolved (nightwatch.tracker_verdicts).")

    @model_validator(mode="before")
    @classmethod
    def _derived_fingerprint(cls, data: object) -> object:
        """The fingerprint is derived: accept it from a dumped report, never trust it."""
        if isinstance(data, dict) and "fingerprint" in data:
            data = {k: v for k, v in data.items() if k != "fingerprint"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self.error_class, self.transaction, self.message)

    @property
    def user_facing(self) -> bool:
        return is_web_transaction(self.transaction)

    @property
    def label(self) -> str:
        return f"{self.error_class} in {self.transaction}"


class StackFrame(Model):
    file: StorableText
    line: int | None = None
    method: StorableText = ""
    in_app: bool = False
    located: bool = Field(default=False, description="`file` is a file of the repository (mapped from `deployed_path`).")
    deployed_path: StorableText = Field(default="", description="The path production reported, when it differs from `file`.")
    # Where the source sends them (Sentry's SDKs), redacted and capped:
    module: StorableText = ""
    context: list[tuple[int, StorableText]] = Field(default_factory=list, description="Source lines around `line` as "
                                                    "production ran them: (line number, text).")
    variables: dict[str, StorableText] = Field(default_factory=dict, description="The frame's local variables, each "
                                               "value as the SDK wrote it (a repr), redacted and capped.")

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} in `{self.method}`" if self.method else where


class ChainedException(Model):
    """One exception of a chain (`raise ... from ...`, or raised while handling another), oldest first."""

    error_class: StorableText
    message: StorableText = ""
    handled: bool | None = None
    mechanism: StorableText = ""
    relation: Literal["", "cause", "context", "chained"] = Field(
        default="", description="How the next exception of the chain follows this one: raised from it (cause), while "
                                "handling it (context), or either (chained: the source did not say).")


class Breadcrumb(Model):
    """What the application did shortly before the error, as the SDK recorded it: a query, an HTTP call, a log line."""

    at: datetime | None = None
    category: StorableText = ""  # query, httplib, django.request, a logger's name ...
    level: StorableText = ""
    message: StorableText = ""
    data: StorableText = ""  # the rest of what it recorded, one redacted line


class RequestFacts(Model):
    """The request that failed, as the SDK recorded it: its shape, never its values (those stay with the traces)."""

    method: StorableText = ""
    path: StorableText = ""
    route: StorableText = ""  # the transaction: the route it matched, where the SDK names one
    query_keys: list[StorableText] = Field(default_factory=list)
    body_keys: list[StorableText] = Field(default_factory=list)
    status: int | None = None


class TraceData(Model):
    """Traces and stack frames of one error, already redacted and size-capped."""

    fingerprint: str
    transaction_errors: list[dict] = Field(default_factory=list)
    stack_frames: list[StackFrame] = Field(default_factory=list)
    stack_trace: StorableText = ""
    truncated: bool = False
    notes: list[str] = Field(default_factory=list)
    exceptions: list[ChainedException] = Field(default_factory=list, description="Every exception of the newest "
                                               "occurrence's chain, oldest first (the last one is the error).")
    breadcrumbs: list[Breadcrumb] = Field(default_factory=list, description="The newest occurrence's breadcrumbs, "
                                          "oldest first (where the source records them).")
    request: RequestFacts | None = None

    @property
    def in_app_frames(self) -> list[StackFrame]:
        return [f for f in self.stack_frames if f.in_app]


class FileChange(Model):
    """One edit of a proposed fix: replace `before` (an exact excerpt of the file) with `after`."""

    path: str
    action: Literal["modify", "create", "delete"] = "modify"
    description: str = ""
    before: str | None = None
    after: str | None = None


class RegressionTest(Model):
    """A test that fails as production did (the same exception class, raised through the crash frame) and passes
    once the fix is applied. It becomes part of the fix."""

    path: str = Field(min_length=1, description="Repository-relative path of the test file, new or existing, e.g. "
                                                "tests/test_pricing_regression.py.")
    content: str = Field(min_length=1, description="The whole file as it should be after the change.")
    test: str = Field(default="", description="The test to run as the runner names it (pytest node id path::name, or a "
                                             "Django/unittest dotted label); default: the whole file.")


class CodeLocation(Model):
    """A place in the repository: a repository-relative file and, when known, a line."""

    file: str = Field(min_length=1, description="Repository-relative path, e.g. app/models/order.rb.")
    line: int | None = Field(default=None, ge=1, description="1-based line number, when known.")
    note: str = Field(default="", description="What happens there, in a few words.")


class Analysis(Model):
    """The agent's final answer, obtained through a schema-validated tool call."""

    title: str = Field(min_length=1, description="One line naming the defect, as an issue title.")
    reasoning: str = Field(min_length=1, description="How the evidence leads to the root cause.")
    root_cause: str = Field(min_length=1, description="The root cause, one or two sentences.")
    has_fix: bool = Field(description="True only if file_changes hold a concrete fix.")
    confidence: Confidence
    crash_site: CodeLocation | None = Field(
        default=None, description="Where the error was raised: the first application frame of the trace.")
    origin: CodeLocation | None = Field(
        default=None, description="Where the defect is: where the bad value was produced or assigned, the callback or "
                                  "filter that ran (or did not), the caller that misses a rescue. The fix goes here. "
                                  "Equal to crash_site only when the crash line itself is wrong.")
    file_changes: list[FileChange] = Field(default_factory=list)
    regression_test: RegressionTest | None = Field(
        default=None, description="A test that reproduces the production error before the fix and passes after it "
                                  "(try it with run_test where that tool is offered).")
    suggested_next_steps: list[str] = Field(default_factory=list)


class TokenUsage(Model):
    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    thinking: int = 0
    cache_write_1h: int = 0  # of cache_write, what was written with the 1-hour TTL (priced higher)

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(**{k: getattr(self, k) + getattr(other, k) for k in TokenUsage.model_fields})


class ModelCall(Model):
    """One call to a model: the unit of the `model_calls` ledger."""

    call_id: str
    run_id: str
    fingerprint: str
    phase: Literal["triage", "investigate", "wrapup", "summarise"]
    iteration: int = 0
    model: str
    mode: Literal["direct", "batch", "offline"] = "direct"
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    price_table: str = ""
    latency_ms: int = 0
    stop_reason: str = ""
    edits_applied: int = 0
    tokens_cleared: int = 0
    compactions: int = 0
    watcher_actions: int = 0
    checkpoint_id: str | None = None
    started_at: datetime = Field(default_factory=clock.now)
    status: Literal["ok", "unconfirmed", "failed"] = Field(
        default="ok", description="ok: answered and metered from its usage; unconfirmed: the answer was lost (timeout, "
                                  "reset, unreadable body) after the server may have billed it, so the usage is an estimate "
                                  "of the input and no output; failed: refused, never billed.")


class ToolCall(Model):
    run_id: str
    fingerprint: str
    iteration: int
    name: str
    ok: bool
    result_chars: int = 0
    full_chars: int = 0  # without the diet (tools.ToolRunner): result_chars when nothing was withheld
    cached: bool = False
    latency_ms: int = 0


class TriageVerdict(Model):
    fingerprint: str
    severity: Severity = "medium"
    complexity: Complexity = "moderate"
    category: Category = "unknown"
    likely_root_cause: str = ""
    confidence: Confidence = "low"
    needs_deep_investigation: bool = True
    route: Route = "deep"
    route_reason: str = ""
    via: Literal["batch", "direct", "offline", "knowledge", "fallback"] = "direct"
    fallback_reason: str = Field(default="", description="Why a batch entry was answered by a direct call instead.")


class PriorAnalysis(Model):
    fingerprint: str = ""
    error_class: str
    transaction: str
    root_cause: str
    fix_confidence: Confidence
    has_fix: bool
    summary: str
    match_score: float
    source_file: str
    first_detected: str
    file_hashes: dict[str, str] = Field(default_factory=dict)
    fix_confirmed: bool = False
    fix_state: str = "none"  # none, proposed, merged, rejected, reverted, regressed (knowledge_store/outcomes.py)
    trust: float = 0.5
    outcome: str = ""  # what people did with the issue or fix, in one line, for the prompt
    fix_merged_at: datetime | None = None  # when its fix merged (or its issue closed as completed)
    regressed_at: datetime | None = None  # the end of the night that flagged its regression (nightwatch.outcomes)


class CorrelatedPR(Model):
    number: int
    title: str
    url: str = ""
    author: str = ""
    merged_at: datetime | None = None
    files: list[str] = Field(default_factory=list)
    overlap: list[str] = Field(default_factory=list)


class Deploy(Model):
    """When a version of the application reached production: a deploy marker of New Relic's change tracking, or a
    release of Sentry or Bugsink (its version; its commit where the version is one, or the tracker names it)."""

    at: datetime
    commit: str = ""  # the commit it shipped, where the marker names one
    version: str = ""
    deployment_id: str = ""
    user: str = ""
    description: str = ""

    @property
    def label(self) -> str:
        version = self.version[:12] if re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", self.version) else self.version
        return version or (self.commit[:12] if self.commit else "") or self.deployment_id or f"{self.at:%Y-%m-%d %H:%M} UTC"


class SuspectCommit(Model):
    """A commit that last changed lines of the error's stack: who may have introduced it, and how sure that is."""

    sha: str
    subject: str = ""
    author: str = ""
    landed_at: datetime | None = None  # when it reached the default branch (its PR's merge), else its commit time
    pr_number: int | None = None
    pr_url: str = ""
    lines: list[str] = Field(default_factory=list)  # "file:line" of the stack it last changed, top frame first
    hunk: str = ""  # what it did to those lines (capped, redacted)
    hours_before_first_seen: float | None = None  # since the deploy that shipped it, where there is one, else since it landed
    deploy: str = ""  # the deploy marker that first shipped it (its version, commit or id), when one is known
    deployed_at: datetime | None = None
    score: float = 0.0
    confidence: Literal["likely", "possible"] = "possible"
    why: str = ""
    in_release: bool | None = None  # shipped by the release the error was first seen in (None: no release window known)

    @property
    def first_seen_after(self) -> str:
        """How long after it shipped the error was first seen, as a person reads it: "50 h", "300 days", "3.5 years";
        "" when that is not known."""
        return elapsed(self.hours_before_first_seen) if self.hours_before_first_seen is not None else ""


class ReleaseWindow(Model):
    """The deploy that brought an error: the release it was first seen in, the last one before it (without it), and
    the commits between the two (nightwatch.release_window)."""

    release: Deploy
    previous: Deploy | None = None
    commit_count: int | None = None  # None: the code host cannot count them (a version that names no commit)
    commits: list[str] = Field(default_factory=list)  # "<sha> <subject>", newest first, capped

    def shown(self, limit: int = 10) -> tuple[list[str], int]:
        """The newest `limit` commits listed, and how many more the release brought."""
        listed = self.commits[:limit]
        return listed, max((self.commit_count or 0) - len(listed), 0)

    @property
    def line(self) -> str:
        """"first seen in release X, deployed with these N commits (since W)" as the issue and report say it."""
        text = f"first seen in release {self.release.label}"
        if self.commit_count is not None:
            since = f" since {self.previous.label}" if self.previous else ""
            text += f", deployed with {self.commit_count} commit{'s' if self.commit_count != 1 else ''}{since}"
        return text


def elapsed(hours: float) -> str:
    """Hours within three days (how near "likely" is), days within two years, years beyond."""
    if hours < 72:
        return f"{hours:.0f} h"
    days = hours / 24
    return f"{days:,.0f} days" if days < 730 else f"{days / 365.25:.1f} years"


VerificationStatus = Literal["verified", "reproduced, not fixed", "not reproduced", "not run"]


class VerificationRun(Model):
    """One command of a verification, as it ran in the sandbox."""

    label: str  # "regression test before the fix", ...
    command: str
    outcome: str  # passed | failed (exit 1) | killed at the 120 s limit | not run: ...
    seconds: float = 0.0
    output: str = ""  # capped and redacted in the sandbox


SETUP_LABEL = "test environment set-up"  # the VerificationRun that says why the tests could not run


class Verification(Model):
    """Whether the proposed fix was shown to work: its regression test failed as production did and passed with the
    fix, and the existing tests of the touched modules did not start failing."""

    status: VerificationStatus
    reason: str = ""
    test_path: str = ""
    test: str = ""
    runs: list[VerificationRun] = Field(default_factory=list)

    @property
    def line(self) -> str:
        return f"{self.status}: {self.reason}" if self.reason else self.status


class FixCheck(Model):
    """One check of the fix gate: passed, failed (the PR is refused), or could not run here."""

    name: str
    status: Literal["passed", "failed", "not_checked"]
    detail: str = ""


class FixGate(Model):
    """Every check a proposed fix went through before a draft PR."""

    checks: list[FixCheck] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and not any(c.status == "failed" for c in self.checks)

    @property
    def refusal(self) -> str:
        """The failed checks, as one reason."""
        return "; ".join(f"{c.name}: {c.detail}" for c in self.checks if c.status == "failed")


class ErrorAnalysisResult(Model):
    """Everything NightWatch concluded about one error in one run."""

    run_id: str
    error: ErrorGroup
    verdict: TriageVerdict | None = None
    analysis: Analysis | None = None
    source: Literal["model", "cache", "knowledge", "triage", "skipped"] = "model"
    agent: str = ""
    model: str = ""
    iterations: int = 0
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    model_calls: list[ModelCall] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    files_examined: list[str] = Field(default_factory=list)
    prior_analyses: list[PriorAnalysis] = Field(default_factory=list)
    correlated_prs: list[CorrelatedPR] = Field(default_factory=list)
    suspect_commits: list[SuspectCommit] = Field(default_factory=list)
    release_window: ReleaseWindow | None = Field(default=None, description="The release the error was first seen in "
                                                 "and the commits it deployed, where releases or deploy markers say.")
    duration_s: float = 0.0
    failure: str | None = None
    fix_gate: FixGate | None = Field(default=None, description="The checks of the proposed fix (step 8.5), when it has one.")
    verification: Verification | None = Field(default=None, description="The fix's regression test in the sandbox (step 8.5).")
    still_regressing: str = Field(default="", description="A regression an earlier night flagged, seen again: one line "
                                  "(\"still regressing since <date>\"), never announced or counted again.")
    regression: str = Field(default="", description="Why this error is a regression: it came back after its fix merged, "
                            "or its issue was reopened (nightwatch.outcomes).")

    @property
    def fingerprint(self) -> str:
        return self.error.fingerprint

    @property
    def failed(self) -> bool:
        """The analysis this error needed did not happen: its failure says why. Never counted as analysed."""
        return self.failure is not None and self.analysis is None


class CreatedIssueResult(Model):
    fingerprint: str
    action: Literal["created", "commented", "unchanged", "skipped"]
    opened_by_night: bool = False  # this night opened the issue (in this attempt or an earlier one)
    reopened: bool = False  # this night reopened it (a regression): its new state is NightWatch's doing, not an outcome
    issue_number: int | None = None
    url: str = ""
    title: str = ""
    reason: str = ""
    outbox_path: str | None = None


class CreatedPRResult(Model):
    fingerprint: str
    action: Literal["created", "exists", "skipped"]
    pr_number: int | None = None
    url: str = ""
    branch: str = ""
    base_branch: str = ""
    draft: bool = True
    reason: str = ""
    diff_path: str | None = None


class DetectedPattern(Model):
    title: str
    description: str
    error_classes: list[str] = Field(default_factory=list)
    modules: list[str] = Field(default_factory=list)
    occurrences: int = 0
    suggestion: str = ""
    pattern_type: Literal["recurring_error", "systemic_issue", "transient_noise"]


class IgnoreSuggestion(Model):
    pattern: str
    match: Literal["contains", "exact", "prefix", "regex"] = "contains"
    reason: str
    evidence: str


class NoiseDrop(Model):
    """What one ignore or noise rule dropped in a night."""

    rule: str
    reason: str
    errors: int = 0
    occurrences: int = 0
    examples: list[str] = Field(default_factory=list)


class SourceStatus(Model):
    name: str
    state: SourceState
    detail: str


class StepOutcome(Model):
    step: str
    name: str
    status: Literal["ok", "skipped", "failed", "cached"] = "ok"
    detail: str = ""


class RunTotals(Model):
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    model_calls: int = 0
    iterations: int = 0


class RunReport(Model):
    run_id: str
    started_at: datetime
    finished_at: datetime | None = None
    window: Window
    mode: Literal["batch", "interactive"] = "interactive"
    dry_run: bool = False
    agent: str = ""
    model: str = ""
    demo_data: bool = False
    error_source: str = Field(default="", description="newrelic, sentry or bugsink: where the night's errors came from.")
    offline_model: bool = False
    sources: list[SourceStatus] = Field(default_factory=list)
    steps: list[StepOutcome] = Field(default_factory=list)
    errors_found: int = 0
    errors_ignored: int = 0
    errors_selected: int = 0
    noise: list[NoiseDrop] = Field(default_factory=list, description="What each ignore or noise rule dropped.")
    results: list[ErrorAnalysisResult] = Field(default_factory=list)
    issues: list[CreatedIssueResult] = Field(default_factory=list)
    pr: CreatedPRResult | None = None
    patterns: list[DetectedPattern] = Field(default_factory=list)
    ignore_suggestions: list[IgnoreSuggestion] = Field(default_factory=list)
    totals: RunTotals = Field(default_factory=RunTotals)
    reports_dir: str | None = None
    warnings: list[str] = Field(default_factory=list)
    attempt: str = Field(default="", description="The flow run that produced this report; a night may take several.")
    outcomes: list[str] = Field(default_factory=list, description="What people did since the last night with the issues "
                                "and fix PRs NightWatch filed (step 1.5), one line each.")
    trend_svg: str | None = Field(default=None, description="The picture of cost per night and cache hit rate over the "
                                  "last 30 nights, in the report folder.")

    @property
    def regressions(self) -> list[ErrorAnalysisResult]:
        """Errors that came back after their fix merged, or whose issue was reopened: shown first."""
        return [r for r in self.results if r.regression]

    @property
    def still_regressing(self) -> list[ErrorAnalysisResult]:
        """Regressions an earlier night flagged, seen again tonight: a line each, after the new ones."""
        return [r for r in self.results if r.still_regressing and not r.regression]

    @model_validator(mode="before")
    @classmethod
    def _derived_fields(cls, data: object) -> object:
        """Computed fields come back in a dumped report: accept them, never trust them."""
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in ("errors_failed", "steps_failed", "succeeded")}
        return data

    def count_source(self, source: str) -> int:
        return sum(1 for r in self.results if r.source == source)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def errors_failed(self) -> int:
        return sum(1 for r in self.results if r.failed)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def steps_failed(self) -> list[str]:
        return [f"{s.step} {s.name}" for s in self.steps if s.status == "failed"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def succeeded(self) -> bool:
        """Every step did its job and every selected error was analysed: the night's exit code is 0."""
        return not self.errors_failed and not self.steps_failed

    def failures(self) -> list[tuple[ErrorAnalysisResult, str]]:
        """Each error whose analysis failed, with the reason."""
        return [(r, r.failure or "") for r in self.results if r.failed]
