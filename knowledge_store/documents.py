"""Knowledge documents: what NightWatch learned about one error, as Markdown with YAML frontmatter.

One document per fingerprint under `<knowledge_dir>/errors/`, named
`<first_detected>_<slug of class and transaction>_<fingerprint[:8]>.md`. A later night that meets
the same error updates that document (occurrences, runs, the newest analysis) instead of adding a
second one, and writing the same run twice leaves the file byte-for-byte unchanged, so a rerun of
step 12 is harmless. Untrusted text (messages, and model output that may echo them) is redacted
before it is stored. Pattern documents (step 13) live under `<knowledge_dir>/patterns/`.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from nightwatch import clock, safe_yaml
from nightwatch.atomic import atomic_write_text
from nightwatch.models import Analysis, DetectedPattern, ErrorAnalysisResult
from nightwatch.patterns import extract_tags, pattern_doc, slugify
from nightwatch.redact import clean

ERRORS_DIR = "errors"
FIND = "find"  # write_error_doc's `existing` when the caller does not know the document's path
PATTERNS_DIR = "patterns"
MESSAGE_LIMIT = 2_000
TEXT_LIMIT = 20_000
# Sources that carry a new analysis; "cache" and "knowledge" only re-report an earlier one.
FRESH_SOURCES = frozenset({"model", "triage"})


class KnowledgeDocError(ValueError):
    """A knowledge document cannot be read or parsed; the message names the file and the fix."""

    def __init__(self, path: Path, problem: str) -> None:
        hint = "Fix or delete the file, then rebuild the index."
        super().__init__(f"knowledge document {path} is malformed: {problem}. {hint}")
        self.path = path
        self.problem = problem


# ---------------------------------------------------------------- reading and rendering


def read_doc(path: Path) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a document; KnowledgeDocError names the file when it is malformed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeDocError(Path(path), f"cannot be read ({exc})") from exc
    return parse_doc(text, Path(path))


def parse_doc(text: str, path: Path) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        raise KnowledgeDocError(path, "it does not start with a '---' YAML frontmatter line")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise KnowledgeDocError(path, "the YAML frontmatter is never closed by a '---' line")
    try:
        meta = safe_yaml.safe_load(text[4 : end + 1])
    except yaml.YAMLError as exc:
        raise KnowledgeDocError(path, f"invalid YAML frontmatter ({exc})") from exc
    if not isinstance(meta, dict):
        raise KnowledgeDocError(path, "the frontmatter is not a mapping of fields")
    return meta, text[end + 5 :].lstrip("\n")


def render_doc(meta: dict[str, Any], body: str) -> str:
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return f"---\n{front}---\n\n{body.rstrip()}\n"


def render_body(analysis: Analysis) -> str:
    """Title, Root Cause, Analysis, Next Steps, File Changes: the layout docs/knowledge.md describes."""
    steps = [f"- {_text(s, 2_000)}" for s in analysis.suggested_next_steps] or ["- None recorded."]
    changes = [_change_line(c.path, c.action, c.description) for c in analysis.file_changes] or ["- None proposed."]
    title = _text(analysis.title, 300).replace("\n", " ")
    sections = [f"# {title}", "## Root Cause", _text(analysis.root_cause), "## Analysis", _text(analysis.reasoning)]
    sections += ["## Next Steps", "\n".join(steps), "## File Changes", "\n".join(changes)]
    return "\n\n".join(sections) + "\n"


def _change_line(path: str, action: str, description: str) -> str:
    line = f"- `{path}`: {action}"
    return f"{line} — {_text(description, 2_000)}" if description else line


def _text(value: str, limit: int = TEXT_LIMIT) -> str:
    return clean(value, limit)[0].strip()


def section(body: str, heading: str) -> str:
    """The text under `## heading` up to the next `## `; empty if the section is missing."""
    marker = f"## {heading}\n"
    start = body.find(marker)
    if start < 0:
        return ""
    rest = body[start + len(marker) :]
    end = rest.find("\n## ")
    return (rest if end < 0 else rest[:end]).strip()


# ---------------------------------------------------------------- error documents


def find_error_doc(knowledge_dir: Path, fingerprint: str) -> Path | None:
    """The document of `fingerprint`, found by the file name suffix and confirmed by its frontmatter."""
    for candidate in sorted((Path(knowledge_dir) / ERRORS_DIR).glob(f"*_{fingerprint[:8]}.md")):
        meta, _ = read_doc(candidate)
        if meta.get("fingerprint") == fingerprint:
            return candidate
    return None


def write_error_doc(
    result: ErrorAnalysisResult,
    knowledge_dir: Path,
    file_hashes: dict[str, str] | None = None,
    detected_at: datetime | date | None = None,
    existing: Path | None | str = FIND,
) -> Path | None:
    """Create or update the fingerprint's document; None when the result has no analysis to keep.

    `existing` is the document's path when the caller knows it (the knowledge index does), None when there is
    none yet; left out, the folder is searched by file name (a listing of the whole folder)."""
    if result.analysis is None:
        return None
    if existing == FIND:
        existing = find_error_doc(knowledge_dir, result.fingerprint)
    assert not isinstance(existing, str)
    old_meta, old_body = read_doc(existing) if existing else ({}, "")
    meta, body = merge(old_meta, old_body, result, file_hashes, _detected_on(result, detected_at))
    path = existing or Path(knowledge_dir) / ERRORS_DIR / doc_name(meta)
    text = render_doc(meta, body)
    if not (path.exists() and path.read_text(encoding="utf-8") == text):
        atomic_write_text(path, text)
    return path


def doc_name(meta: dict[str, Any]) -> str:
    slug = slugify(f"{meta['error_class']} {meta['transaction']}", 60)
    return f"{meta['first_detected']}_{slug}_{str(meta['fingerprint'])[:8]}.md"


def merge(
    old: dict[str, Any],
    old_body: str,
    result: ErrorAnalysisResult,
    file_hashes: dict[str, str] | None,
    detected_on: date,
) -> tuple[dict[str, Any], str]:
    """The updated frontmatter and body. Counters move once per run; analysis fields only when fresh."""
    runs = [str(r) for r in old.get("runs") or []]
    new_run = result.run_id not in runs
    fresh = not old or result.source in FRESH_SOURCES
    meta = _base_meta(old, result, detected_on)
    meta["occurrences"] = int(old.get("occurrences") or 0) + (result.error.occurrences if new_run else 0)
    meta["runs"] = runs + [result.run_id] if new_run else runs
    meta["last_run_id"] = result.run_id if new_run else old.get("last_run_id", result.run_id)
    if fresh:
        meta.update(_analysis_meta(result, file_hashes))
    return meta, render_body(result.analysis) if fresh else old_body  # type: ignore[arg-type]


def _base_meta(old: dict[str, Any], result: ErrorAnalysisResult, detected_on: date) -> dict[str, Any]:
    """Every field in the documented order; values from the old document until something updates them."""
    error = result.error
    meta: dict[str, Any] = {
        "error_class": old.get("error_class", error.error_class),
        "transaction": old.get("transaction", error.transaction),
        "message": clean(error.message, MESSAGE_LIMIT)[0],
        "occurrences": 0,
        "root_cause": old.get("root_cause", ""),
        "fix_confidence": old.get("fix_confidence", "low"),
        "has_fix": bool(old.get("has_fix", False)),
        "issue_number": old.get("issue_number"),
        "pr_number": old.get("pr_number"),
        "tracker_issue": old.get("tracker_issue") or error.issue_id or None,  # its issue in Sentry or Bugsink
        "tags": sorted(extract_tags(error.error_class, error.transaction)),
        "first_detected": str(old.get("first_detected") or detected_on.isoformat()),
        "run_id": old.get("run_id", result.run_id),
        "iterations_used": old.get("iterations_used", 0),
        "tokens_used": old.get("tokens_used", 0),
        "fingerprint": result.fingerprint,
        "last_run_id": result.run_id,
        "runs": [],
    }
    for key in ("agent", "model", "file_hashes", "route", "source", "introduced_by", "verification", *OUTCOME_FIELDS):
        meta[key] = old.get(key)
    meta["fix_confirmed"] = bool(old.get("fix_confirmed", False))
    return _ordered(meta, old)


_ORDER = (
    *("error_class", "transaction", "message", "occurrences", "root_cause", "fix_confidence", "has_fix"),
    *("issue_number", "pr_number", "tags", "first_detected", "run_id", "iterations_used", "tokens_used"),
    *("fingerprint", "last_run_id", "runs", "agent", "model", "file_hashes", "fix_confirmed", "route", "source"),
    "introduced_by", "verification",
)
# What people did with the analysis (knowledge_store/outcomes.py): kept across analyses, absent until known.
OUTCOME_FIELDS = ("fix_state", "trust", "fix_merged_at", "outcome", "issue_state", "pr_state", "tracker_state",
                  "regressed_at", "fix_digest", "failed_fixes")


def _ordered(meta: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """Known fields in the documented order, then any field a person added by hand (kept, never dropped)."""
    optional = ("tracker_issue", *OUTCOME_FIELDS)  # absent until known
    known = {key: meta.get(key) for key in _ORDER} | {k: meta[k] for k in optional if meta.get(k) is not None}
    return {**known, **{k: v for k, v in old.items() if k not in known}}


def _analysis_meta(result: ErrorAnalysisResult, file_hashes: dict[str, str] | None) -> dict[str, Any]:
    analysis = result.analysis
    assert analysis is not None
    return {
        "root_cause": _text(analysis.root_cause, 2_000),
        "fix_confidence": analysis.confidence,
        "has_fix": analysis.has_fix,
        "iterations_used": result.iterations,
        "tokens_used": result.tokens.total,
        "agent": result.agent or None,
        "model": result.model or None,
        "file_hashes": dict(sorted((file_hashes or {}).items())),
        "route": result.verdict.route if result.verdict else None,
        "source": result.source,
        "introduced_by": _introduced_by(result),
        "verification": result.verification.line[:300] if result.verification else None,
    }


def _introduced_by(result: ErrorAnalysisResult) -> str | None:
    """The best suspect commit, in a line: "<sha> (PR #n, by author, landed <when>; likely, first seen 40 h after)" (an
    older one: "... 3.5 years after")."""
    if not result.suspect_commits:
        return None
    s = result.suspect_commits[0]
    parts = [f"PR #{s.pr_number}" if s.pr_number else "", f"by {clean(s.author, 80)[0]}" if s.author else "",
             f"landed {s.landed_at:%Y-%m-%d %H:%M} UTC" if s.landed_at else ""]
    since = f" deploy {clean(s.deploy, 80)[0]}" if s.deploy else ""
    after = f", first seen {s.first_seen_after} after{since}" if s.first_seen_after else ""
    return f"{s.sha[:12]} ({', '.join(p for p in parts if p)}; {s.confidence}{after})"


def _detected_on(result: ErrorAnalysisResult, detected_at: datetime | date | None) -> date:
    """The analysis date: given, else the first model call, else the error's last occurrence, else today."""
    moment = detected_at or min((c.started_at for c in result.model_calls), default=None) or result.error.last_seen
    if isinstance(moment, datetime):
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).date()
    return moment or clock.today()


def update_doc_metadata(
    knowledge_dir: Path,
    fingerprint: str,
    issue_number: int | None = None,
    pr_number: int | None = None,
    fix_confirmed: bool | None = None,
    path: Path | None | str = FIND,
    **fields: Any,
) -> Path | None:
    """Back-fill the issue/PR numbers, the fix confirmation or other `fields` (outcomes: fix_state, trust, …);
    None when no document has the fingerprint. `path` as for write_error_doc."""
    if path == FIND:
        path = find_error_doc(knowledge_dir, fingerprint)
    if path is None:
        return None
    assert not isinstance(path, str)
    meta, body = read_doc(path)
    for kind, number in (("issue", issue_number), ("pr", pr_number)):
        if number is not None and meta.get(f"{kind}_number") != number:  # a new issue or PR: its state is not known yet
            meta = {k: v for k, v in meta.items() if k != f"{kind}_state"}
    changes = {"issue_number": issue_number, "pr_number": pr_number, "fix_confirmed": fix_confirmed, **fields}
    updated = {**meta, **{k: v for k, v in changes.items() if v is not None}}
    if updated != meta:
        atomic_write_text(path, render_doc(updated, body))
    return path


# ---------------------------------------------------------------- pattern documents


def write_pattern_doc(pattern: DetectedPattern, knowledge_dir: Path) -> Path:
    """Create or refresh `patterns/<slug of title>.md`; an unchanged pattern leaves the file untouched."""
    name, text = pattern_doc(pattern)
    path = Path(knowledge_dir) / PATTERNS_DIR / name
    if not (path.exists() and path.read_text(encoding="utf-8") == text):
        atomic_write_text(path, text)
    return path
