"""Step 3.5, research: what the agent would otherwise spend its first iterations discovering.

Likely files come from the transaction name (Rails and Python conventions) and the in-app stack
frames; previews of the top files are fetched within a token cap; prior analyses and correlated PRs
are attached. All of it goes into the first message, once, where it can be cached.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from pydantic import Field

from nightwatch.codehosts.base import CodeHost, CodeHostError
from nightwatch.models import (
    CorrelatedPR,
    Deploy,
    ErrorGroup,
    Model,
    PriorAnalysis,
    ReleaseWindow,
    SuspectCommit,
    TraceData,
)
from nightwatch.release_window import release_window
from nightwatch.suspects import blamable_frames, can_blame, suspect_commits
from nightwatch.tokens import estimate_text

PREVIEW_LINES = 100


class ResearchContext(Model):
    fingerprint: str
    likely_files: list[str] = Field(default_factory=list)
    file_previews: dict[str, str] = Field(default_factory=dict)
    file_digests: dict[str, str] = Field(default_factory=dict)
    prior_analyses: list[PriorAnalysis] = Field(default_factory=list)
    correlated_prs: list[CorrelatedPR] = Field(default_factory=list)
    suspect_commits: list[SuspectCommit] = Field(default_factory=list)
    deploys: list[Deploy] = Field(default_factory=list)  # the night's deploy markers, as the suspects were ranked by
    release_window: ReleaseWindow | None = None  # the release the error was first seen in (nightwatch.release_window)
    notes: list[str] = Field(default_factory=list)
    regression: str = ""  # why the error is a regression of an analysis whose fix merged (nightwatch.outcomes)
    still_regressing: str = ""  # a regression an earlier night flagged: "still regressing since <date>"


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("::", "/").lower()


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ses", "xes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def files_from_transaction(transaction: str) -> list[str]:
    """`Controller/orders/show` -> orders controller + Order model; `.../SidekiqJob/ImportJob/perform` -> the job;
    `OtherTransaction/Celery/jobs.send_digest` -> jobs.py; `WebTransaction/Function/shop.views:order_detail` ->
    shop/views.py."""
    parts = [p for p in transaction.split("/") if p]
    if len(parts) >= 3 and parts[0] == "Controller":
        path = "/".join(parts[1:-1])
        resource = _singular(path.split("/")[-1])
        return [f"app/controllers/{path}_controller.rb", f"app/models/{resource}.rb", f"app/views/{path}/{parts[-1]}.html.erb"]
    if len(parts) >= 3 and parts[:2] in (["OtherTransaction", "Celery"], ["OtherTransaction", "RQ"]):
        return _python_module_files(parts[2].rpartition(".")[0])  # a task is named `<module>.<function>`
    named = parts[2:] if parts[:1] == ["OtherTransaction"] else parts  # past the dispatcher (`SidekiqJob`)
    job = next((p for p in named if p.endswith(("Job", "Worker", "Task"))), None)
    if job:
        stem = _snake(job)
        return [f"app/jobs/{stem}.rb", f"app/workers/{stem}.rb", f"{stem}.py", f"tasks/{stem}.py"]
    return _python_module_files(_python_view_module(parts))


def _python_view_module(parts: list[str]) -> str:
    """`WebTransaction/Function/shop.views:InvoiceView.get` -> `shop.views`: the module before the view; '' for
    a transaction that does not name a Python callable."""
    if len(parts) < 2 or parts[0] not in ("WebTransaction", "OtherTransaction", "Function") or ":" not in parts[-1]:
        return ""
    return parts[-1].split(":")[0]


def _python_module_files(dotted: str) -> list[str]:
    """A Python module's file: `shop.views` -> shop/views.py, or the package shop/views/__init__.py."""
    if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", dotted):
        return []
    path = dotted.replace(".", "/")
    return [f"{path}.py", f"{path}/__init__.py"]


# Errors raised while matching or building a URL: the URL configuration decides their shape, so it is read too.
_ROUTING_ERROR = re.compile(r"(?:^|[.:])(?:NoReverseMatch|Resolver404|BuildError|NoMatchFound)$")


def routing_files(error_class: str, transaction: str, traces: TraceData | None = None) -> list[str]:
    """The URL configuration beside a Python view whose error is a routing one: `shop.views:report` raising
    NoReverseMatch -> shop/urls.py (the app's patterns) and urls.py files up the package. Where the transaction names a
    route rather than the view (`/accounts/login/`, as Sentry's SDKs name it), the view is the outermost application
    frame, the function the framework called."""
    module = _python_view_module([p for p in transaction.split("/") if p]) or _outermost_module(traces)
    if not _ROUTING_ERROR.search(error_class) or not module:
        return []
    package = module.split(".")[:-1]
    return ["/".join([*package[:i], "urls.py"]) for i in range(len(package), -1, -1)]


def _outermost_module(traces: TraceData | None) -> str:
    """The dotted module of the outermost Python application frame: the one the source names, else its file's path."""
    frames = [f for f in (traces.in_app_frames if traces else []) if f.file.endswith(".py")]
    if not frames:
        return ""
    outer = frames[-1]
    return outer.module or outer.file.removesuffix(".py").replace("/", ".")


def files_from_traces(traces: TraceData, limit: int = 5) -> list[str]:
    seen: list[str] = []
    for frame in traces.in_app_frames:
        path = frame.file.lstrip("./")
        if path not in seen:
            seen.append(path)
        if len(seen) >= limit:
            break
    return seen


def research_error(
    error: ErrorGroup,
    traces: TraceData,
    host: CodeHost,
    prior: list[PriorAnalysis],
    recent_prs: list[CorrelatedPR],
    token_cap: int = 6_000,
    max_files: int = 5,
    deploys: list[Deploy] | None = None,
) -> ResearchContext:
    ctx = ResearchContext(fingerprint=error.fingerprint, prior_analyses=prior, deploys=deploys or [])
    candidates = files_from_traces(traces) + files_from_transaction(error.transaction) \
        + routing_files(error.error_class, error.transaction, traces)
    spent = 0
    for path in dict.fromkeys(candidates):
        digest = host.file_digest(path)
        if digest is None:
            continue
        ctx.likely_files.append(path)
        ctx.file_digests[path] = digest
        if len(ctx.file_previews) < max_files and spent < token_cap:
            preview = _preview(host, path, traces)
            cost = estimate_text(preview)
            if spent + cost <= token_cap:
                ctx.file_previews[path] = preview
                spent += cost
            else:
                ctx.notes.append(f"preview of {path} left out: token cap {token_cap} reached")
    ctx.correlated_prs = correlate(ctx.likely_files, recent_prs)
    ctx.release_window = release_window(host, ctx.deploys, error.first_seen, error.first_release)
    _add_suspects(ctx, host, error, traces)
    return ctx


def _add_suspects(ctx: ResearchContext, host: CodeHost, error: ErrorGroup, traces: TraceData) -> None:
    """The commits that last changed the stack's lines (nightwatch.suspects), where the host can blame."""
    frames = blamable_frames(traces)
    if not frames:
        return
    if not can_blame(host):
        ctx.notes.append("suspect commits: this code host cannot blame lines")
        return
    ctx.suspect_commits, notes = suspect_commits(host, frames, error.first_seen, deploys=ctx.deploys,
                                                 window=ctx.release_window)
    ctx.notes.extend(f"suspect commits: {n}" for n in notes)


def _preview(host: CodeHost, path: str, traces: TraceData) -> str:
    """The lines around the frame that points into this file, else the head of the file."""
    line = next((f.line for f in traces.in_app_frames if f.file.lstrip("./") == path and f.line), None)
    start = max(1, (line or 1) - PREVIEW_LINES // 2) if line else 1
    try:
        return host.read_file(path, start_line=start, end_line=start + PREVIEW_LINES - 1, numbered=True)
    except CodeHostError as exc:
        return f"(could not read: {exc})"


def correlate(files: list[str], prs: list[CorrelatedPR]) -> list[CorrelatedPR]:
    """Recently merged PRs that touched any of the error's files, newest first."""
    wanted = set(files)
    out = []
    for pr in prs:
        overlap = sorted(wanted.intersection(pr.files))
        if overlap:
            out.append(pr.model_copy(update={"overlap": overlap}))
    return sorted(out, key=lambda p: p.merged_at or datetime.min, reverse=True)[:5]


def pr_lookback(window_end: datetime, days: int = 14) -> datetime:
    return window_end - timedelta(days=days)
