"""NerdGraph responses into NightWatch models: envelopes, facet rows, stack traces, trace rows.

Everything here handles untrusted production data, so every text goes through `redact.clean()`, every
size is bounded, and a bad row costs a warning instead of the whole batch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from nightwatch.models import Deploy, ErrorGroup, StackFrame, TraceData
from nightwatch.redact import REDACTED, cap, clean
from nightwatch.sources.base import SourceError
from nightwatch.sources.nrql import STATUS_ALIASES

RESULTS_PATH = ("data", "actor", "account", "nrql", "results")
MESSAGE_LIMIT = 2000
ATTRIBUTE_LIMIT = 2000
MAX_ATTRIBUTES = 200
MAX_FRAMES = 200
FRAME_SCAN_CHARS = 200_000  # frames are parsed from this much of a trace, however large the trace is
_STACK_KEYS = ("stackTrace", "stack_trace", "error.stack_trace", "error.stackTrace")
_SECRET_KEY = re.compile(
    r"(?i)password|passwd|secret|token|api[_-]?key|authorization|cookie|session|credential|private[_-]?key"
)
_LIBRARY_MARKERS = (
    "gems/",
    "site-packages/",
    "dist-packages/",
    "usr/",
    "vendor/",
    "ruby/",
    "node_modules/",
    "lib/python",
)


# --- the NerdGraph envelope -------------------------------------------------------------------


def unwrap_results(response: Any, what: str) -> tuple[list[dict], list[str]]:
    """Rows of a NRQL response plus warnings; data + errors is a partial result, not a failure."""
    if not isinstance(response, dict):
        raise SourceError(
            f"NerdGraph returned a malformed response for the {what}: a {type(response).__name__}, not an object"
        )
    problems = _graphql_errors(response.get("errors"))
    results = _dig(response, RESULTS_PATH)
    if not isinstance(results, list):
        raise SourceError(_unusable(response, what, results, problems))
    rows = [row for row in results if isinstance(row, dict)]
    warnings = [f"NerdGraph reported a partial result for the {what}: {p}" for p in problems]
    if len(rows) < len(results):
        warnings.append(f"ignored {len(results) - len(rows)} result(s) of the {what} that were not objects")
    return rows, warnings


def _dig(node: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _graphql_errors(errors: Any) -> list[str]:
    if not errors:
        return []
    items = errors if isinstance(errors, list) else [errors]
    messages = [item.get("message", item) if isinstance(item, dict) else item for item in items]
    return [clean(str(m), limit=500)[0] for m in messages]


def _unusable(response: dict, what: str, results: Any, problems: list[str]) -> str:
    found = "missing" if results is None else f"a {type(results).__name__} instead of a list at"
    keys = ", ".join(sorted(map(str, response))) or "none"
    path = ".".join(RESULTS_PATH)
    message = f"NerdGraph returned a malformed response for the {what}: {found} {path} (top-level keys: {keys})"
    if problems:
        message += "; NerdGraph errors: " + "; ".join(problems[:3])
    return message


# --- values -------------------------------------------------------------------------------------


def parse_timestamp(value: Any) -> datetime | None:
    """NerdGraph timestamps (epoch milliseconds, or ISO-8601 text) as timezone-aware UTC datetimes."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()):
        value = float(value)
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"timestamp {value!r} is not a number")
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    if isinstance(value, str):
        moment = datetime.fromisoformat(value.strip())
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    raise ValueError(f"timestamp {value!r} is neither epoch milliseconds nor ISO-8601")


def _count(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"occurrences {value!r} is not a count")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"occurrences {value!r} is not a count")
    return int(number)


def status_code(value: Any) -> int | None:
    """An HTTP status (100-599) from a number or its text; None for anything else."""
    try:
        status = int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return status if 100 <= status <= 599 else None


# --- facet rows -> error groups ---------------------------------------------------------------


@dataclass
class ParsedErrors:
    """Error groups, warnings, and the raw (class, transaction) pairs merged into each fingerprint."""

    errors: list[ErrorGroup] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    members: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def parse_error_rows(rows: list[Any], app_name: str) -> tuple[list[ErrorGroup], list[str]]:
    """Facet rows into error groups, merging rows that share a fingerprint."""
    parsed = collect_error_groups(rows, app_name)
    return parsed.errors, parsed.warnings


def collect_error_groups(rows: list[Any], app_name: str) -> ParsedErrors:
    """Like `parse_error_rows`, and remembers which raw facets make up each group."""
    parsed = ParsedErrors()
    groups: dict[str, ErrorGroup] = {}
    for index, row in enumerate(rows):
        try:
            group, raw_pair = _group_from_row(row, app_name)
        except (ValueError, TypeError, OverflowError, OSError) as exc:
            parsed.warnings.append(f"skipped row {index} of the errors query: {clean(str(exc), limit=300)[0]}")
            continue
        fp = group.fingerprint
        groups[fp] = merge_groups(groups[fp], group) if fp in groups else group
        parsed.members.setdefault(fp, []).append(raw_pair)
    parsed.errors = list(groups.values())
    return parsed


def _group_from_row(row: Any, app_name: str) -> tuple[ErrorGroup, tuple[str, str]]:
    if not isinstance(row, dict):
        raise ValueError(f"expected an object, got a {type(row).__name__}")
    facet = row.get("facet")
    facet = facet if isinstance(facet, list) else [None, None]
    raw_class = row.get("error.class") or (facet[0] if facet else None)
    raw_tx = row.get("transactionName") or (facet[1] if len(facet) > 1 else None)
    if not isinstance(raw_class, str) or not raw_class.strip():
        raise ValueError(f"no error.class (got {raw_class!r})")
    if not isinstance(raw_tx, str) or not raw_tx.strip():
        raise ValueError(f"no transactionName for {raw_class!r} (got {raw_tx!r})")
    group = ErrorGroup(
        error_class=clean(raw_class.strip(), limit=300)[0],
        transaction=clean(raw_tx.strip(), limit=500)[0],
        message=clean(str(row.get("message") or ""), limit=MESSAGE_LIMIT)[0],
        occurrences=_count(row.get("occurrences", row.get("count"))),
        first_seen=parse_timestamp(row.get("first_seen")),
        last_seen=parse_timestamp(row.get("last_seen")),
        app_name=app_name,
        http_status=next((s for s in map(status_code, map(row.get, STATUS_ALIASES)) if s is not None), None),
    )
    return group, (raw_class, raw_tx)


def merge_groups(a: ErrorGroup, b: ErrorGroup) -> ErrorGroup:
    """One group from two facets of the same defect: counts add up, the time range widens."""
    primary = a if a.occurrences >= b.occurrences else b
    latest = max((a, b), key=lambda g: g.last_seen or datetime.min.replace(tzinfo=timezone.utc))
    firsts = [t for t in (a.first_seen, b.first_seen) if t]
    lasts = [t for t in (a.last_seen, b.last_seen) if t]
    return primary.model_copy(
        update={
            "occurrences": a.occurrences + b.occurrences,
            "first_seen": min(firsts, default=None),
            "last_seen": max(lasts, default=None),
            "message": latest.message or primary.message,
            "http_status": latest.http_status or primary.http_status,
        }
    )


# --- stack traces -----------------------------------------------------------------------------

_PYTHON_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<method>.+?))?\s*$')
_AT_FRAME = re.compile(r"^\s*at\s+(?:(?P<method>[^\s(]+)\s*\()?(?P<file>[^\s()]+?):(?P<line>\d+)(?::\d+)?\)?\s*$")
_RUBY_FRAME = re.compile(
    r"^\s*(?:from\s+)?(?P<file>(?:[A-Za-z]:[\\/])?[^\s:'\"`(][^\s:]*):(?P<line>\d+)(?::in\s+[`'](?P<method>[^`']*)')?"
)


# A Python environment's bin/ holds console-script entry points (gunicorn, celery, uvicorn), never application code:
# venv, .venv, venv-3.11, env, virtualenvs/<name>, conda's envs/<name>, tox's .tox/<name>
_ENVIRONMENT_BIN = re.compile(r"/(?:\.?venv[\w.-]*|\.?env|\.?virtualenv|\.?virtualenvs/[^/]+|venvs/[^/]+|envs/[^/]+|\.tox/[^/]+)/bin/")


def is_app_path(path: str) -> bool:
    """True for the application's own code: anything not in gems, site-packages, /usr, vendor, ruby or a Python
    environment's bin/."""
    if not path or path.startswith(("<", "(", "[")):
        return False
    probe = "/" + path.replace("\\", "/").lstrip("./")
    return not any(f"/{marker}" in probe for marker in _LIBRARY_MARKERS) and not _ENVIRONMENT_BIN.search(probe)


def parse_stack_trace(trace: str | list | bytes | None) -> list[StackFrame]:
    """Stack frames of a Ruby, Python or JVM/JS trace, raising frame first, at most 200."""
    return stack_frames_with_notes(trace)[0]


def stack_frames_with_notes(trace: str | list | bytes | None) -> tuple[list[StackFrame], list[str]]:
    """Frames plus notes on what was left out (frames beyond the cap, text beyond the scan bound)."""
    lines, notes = _trace_lines(trace)
    frames: list[StackFrame] = []
    python_frames = 0
    for line in lines:
        frame, is_python = _frame_of(line)
        if frame is not None:
            frames.append(frame)
            python_frames += is_python
    if frames and python_frames == len(frames):
        frames.reverse()  # Python prints the raising frame last
    if len(frames) > MAX_FRAMES:
        notes.append(
            f"frames truncated: kept the top {MAX_FRAMES} of {len(frames)} ({len(frames) - MAX_FRAMES} dropped)"
        )
        frames = frames[:MAX_FRAMES]
    return frames, notes


def _trace_lines(trace: str | list | bytes | None) -> tuple[list[Any], list[str]]:
    if trace is None:
        return [], []
    if isinstance(trace, bytes):
        trace = trace.decode("utf-8", errors="replace")
    if isinstance(trace, str):
        notes = []
        if len(trace) > FRAME_SCAN_CHARS:
            notes.append(f"frames truncated: parsed from the first {FRAME_SCAN_CHARS:,} of {len(trace):,} characters")
        text = trace[:FRAME_SCAN_CHARS]
        as_list = _json_list(text)
        return (as_list if as_list is not None else text.splitlines()), notes
    if isinstance(trace, (list, tuple)):
        bound = MAX_FRAMES * 5
        notes = (
            [f"frames truncated: parsed the first {bound:,} of {len(trace):,} entries"] if len(trace) > bound else []
        )
        return list(trace[:bound]), notes
    return [], [f"stack trace of unexpected type {type(trace).__name__} ignored"]


def _json_list(text: str) -> list | None:
    if not text.lstrip().startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _frame_of(item: Any) -> tuple[StackFrame | None, bool]:
    if isinstance(item, dict):
        return _frame_of_dict(item), False
    if not isinstance(item, str):
        return None, False
    for pattern in (_PYTHON_FRAME, _AT_FRAME, _RUBY_FRAME):
        match = pattern.match(item[:2000])
        if match:
            return _frame(match["file"], match["line"], match["method"]), pattern is _PYTHON_FRAME
    return None, False


def _frame_of_dict(item: dict) -> StackFrame | None:
    path = next((item[k] for k in ("file", "filename", "fileName", "path") if item.get(k)), None)
    line = next((item[k] for k in ("line", "lineno", "lineNumber", "line_number") if item.get(k) is not None), None)
    method = next((item[k] for k in ("method", "function", "methodName", "name") if item.get(k)), None)
    return _frame(str(path), line, method) if path else None


def _frame(path: str, line: Any, method: Any) -> StackFrame:
    file = clean(path.strip(), limit=500)[0]
    try:
        number = int(line) if line is not None else None
    except (TypeError, ValueError):
        number = None
    name = clean(str(method).strip(), limit=300)[0] if method else ""
    return StackFrame(file=file, line=number, method=name, in_app=is_app_path(file))


# --- trace rows -> TraceData ------------------------------------------------------------------


def clean_attributes(row: dict) -> dict[str, Any]:
    """An event's attributes, redacted and capped; secret-named attributes lose their value."""
    out: dict[str, Any] = {}
    for key, value in list(row.items())[:MAX_ATTRIBUTES]:
        name = clean(str(key), limit=200)[0]
        out[name] = _clean_value(name, value)
    return out


def _clean_value(name: str, value: Any) -> Any:
    if value is None:
        return None
    if _SECRET_KEY.search(name):
        return REDACTED
    if name == "timestamp":
        try:
            return parse_timestamp(value).isoformat()  # type: ignore[union-attr]
        except (AttributeError, ValueError, OverflowError, OSError):
            pass
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    text = value if isinstance(value, (str, bytes)) else json.dumps(value, default=str)
    return clean(text, limit=ATTRIBUTE_LIMIT)[0]


def parse_traces(
    fingerprint: str, tx_rows: list[Any], trace_rows: list[Any], trace_char_limit: int = 20_000
) -> TraceData:
    """TraceData of one error: cleaned occurrences, the newest stack trace capped, its frames."""
    traces = sort_newest_first(trace_rows)
    raw = next((r[k] for r in traces for k in _STACK_KEYS if r.get(k)), None)
    data = TraceData(
        fingerprint=fingerprint, transaction_errors=[clean_attributes(r) for r in tx_rows if isinstance(r, dict)]
    )
    if raw is None:
        data.notes.append("no stack trace in the error traces" if traces else "no error traces found")
        return data
    frames, frame_notes = stack_frames_with_notes(raw)
    text, text_notes = stack_text(raw, trace_char_limit)
    notes = frame_notes + text_notes
    data.stack_frames, data.stack_trace = frames, text
    data.notes.extend(f"stack trace: {note}" for note in notes)
    data.truncated = any("truncated" in note for note in notes)
    return data


def sort_newest_first(rows: list[Any]) -> list[dict]:
    """Event rows, most recent `timestamp` first; rows without a readable timestamp last."""
    return sorted((r for r in rows if isinstance(r, dict)), key=_age_key)


def _age_key(row: dict) -> float:
    try:
        moment = parse_timestamp(row.get("timestamp"))
    except (ValueError, OverflowError, OSError):
        moment = None
    return -moment.timestamp() if moment else math.inf


def stack_text(raw: Any, limit: int) -> tuple[str, list[str]]:
    """The stack trace as text, at most `limit` characters. A huge trace is first cut to 4x the limit (so a
    5 MB trace costs no more than that to redact), then redacted, then cut to the limit: the second cut
    drops the regions around the first one, so no half of a secret cut there survives."""
    if isinstance(raw, (list, tuple)):
        raw = "\n".join(_frame_line(item) for item in raw[: MAX_FRAMES * 5])
    elif not isinstance(raw, (str, bytes)):
        raw = json.dumps(raw, default=str)
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    capped, note = cap(raw, 4 * limit)
    text, notes = clean(capped, limit=limit)
    if note:
        notes = [n for n in notes if not n.startswith("truncated")]
        note = f"truncated: kept {limit:,} of {len(raw):,} characters ({len(raw) - limit:,} dropped from the middle)"
    return text, ([note] if note else []) + notes


def _frame_line(item: Any) -> str:
    if isinstance(item, dict):
        frame = _frame_of_dict(item)
        return frame.render() if frame else json.dumps(item, default=str)
    return str(item)


def parse_deploys(rows: list[Any]) -> tuple[list[Deploy], list[str]]:
    """Deploy markers (the `Deployment` rows of NRQL), oldest first; a row without a time is skipped with a note. Their
    text is the deployer's (untrusted): cleaned and capped here, made inert where it is shown."""
    deploys: list[Deploy] = []
    skipped = 0
    for row in rows:
        try:
            at = parse_timestamp(row.get("timestamp")) if isinstance(row, dict) else None
        except (ValueError, OverflowError, OSError):
            at = None
        if at is None:
            skipped += 1
            continue
        text = {key: clean(str(row.get(name) or ""), limit)[0] for key, name, limit in _DEPLOY_TEXT}
        deploys.append(Deploy(at=at, **text))
    notes = [f"{skipped} deploy marker row(s) without a readable timestamp skipped"] if skipped else []
    return sorted(deploys, key=lambda d: d.at), notes


_DEPLOY_TEXT = (("commit", "commit", 80), ("version", "version", 80), ("deployment_id", "deploymentId", 80),
                ("user", "user", 120), ("description", "description", 300))
