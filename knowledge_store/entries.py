"""A knowledge document read as one row of the knowledge index: the fields search and patterns need.

Pure functions over a document's text: no database here. A document that lacks a required field or
carries a mistyped one raises KnowledgeDocError naming the field, so the index can skip and report it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nightwatch.knowledge_store.documents import KnowledgeDocError, parse_doc, section
from nightwatch.knowledge_store.text_relevance import terms_of

from nightwatch.fingerprint import fingerprint_of, normalise_transaction
from nightwatch.patterns import extract_tags, module_of

ROOT_CAUSE_CHARS = 2_000
SUMMARY_CHARS = 500  # of the Analysis section: what a prompt shows of a prior analysis
MESSAGE_CHARS = 500
# Trust of an analysis nobody has judged yet; outcomes (merged, rejected, reverted) move it.
DEFAULT_TRUST = 0.5


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def doc_id(path: str) -> int:
    """A stable 63-bit id for a document path (the key that joins its tags and terms)."""
    return token_id(path)


def tag_id(tag: str) -> int:
    """Tags live in the same id space as terms (the vocabulary counts both), kept apart by a prefix."""
    return token_id(f"tag:{tag}")


def token_id(text: str) -> int:
    """A stable 63-bit id for a path, tag or term: integers compare and join faster than strings."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def read_entry(path: Path, root: Path) -> dict[str, Any]:
    """The index row of the document at `path` (an error document or a pattern), with its content hash and stat."""
    try:
        data = path.read_bytes()
        stat = path.stat()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeDocError(path, f"cannot be read ({exc})") from exc
    meta, body = parse_doc(text, path)
    relative = path.relative_to(root).as_posix()
    row = pattern_row(meta, path) if relative.startswith("patterns/") else solution_row(meta, body, path)
    return row | {"doc_id": doc_id(relative), "path": relative, "content_hash": content_hash(data),
                  "mtime_ns": stat.st_mtime_ns, "size": stat.st_size}


def solution_row(meta: dict, body: str, path: Path) -> dict[str, Any]:
    """An error document's row; raises KnowledgeDocError when required fields are missing or mistyped."""
    error_class, transaction = required_text(meta, path, "error_class"), required_text(meta, path, "transaction")
    message = str(meta.get("message") or "")
    root_cause = str(meta.get("root_cause") or section(body, "Root Cause"))
    hashes = file_hashes(meta, path)
    runs = meta.get("runs") if isinstance(meta.get("runs"), list) else []
    fix_confirmed = bool(meta.get("fix_confirmed", False))
    return {
        "kind": "solution",
        "fingerprint": str(meta.get("fingerprint") or fingerprint_of(error_class, transaction, message)),
        "error_class": error_class,
        "transaction": transaction,
        "transaction_key": normalise_transaction(transaction),
        "module": module_of(transaction),
        "message": message[:MESSAGE_CHARS],
        "root_cause": root_cause[:ROOT_CAUSE_CHARS],
        "summary": (section(body, "Analysis") or body)[:SUMMARY_CHARS],
        "outcome": str(meta.get("outcome") or ""),
        "tags": tags(meta, path, error_class, transaction),
        "files": sorted(hashes),
        "file_hashes": hashes,
        "fix_confidence": str(meta.get("fix_confidence") or "low"),
        "has_fix": bool(meta.get("has_fix", False)),
        "fix_confirmed": fix_confirmed,
        "fix_state": str(meta.get("fix_state") or ("merged" if fix_confirmed else "none")),
        "trust": number(meta, path, "trust", DEFAULT_TRUST),
        "fix_merged_at": moment(meta, path, "fix_merged_at"),
        "regressed_at": moment(meta, path, "regressed_at"),
        "first_detected": str(meta.get("first_detected") or ""),
        "last_run_id": str(meta.get("last_run_id") or meta.get("run_id") or ""),
        "run_count": len(runs) or 1,
        "occurrences": integer(meta, path, "occurrences") or 0,
        "issue_number": integer(meta, path, "issue_number"),
        "pr_number": integer(meta, path, "pr_number"),
        **{key: str(meta[key])[:200] if meta.get(key) else None
           for key in ("issue_state", "pr_state", "tracker_issue", "tracker_state")},
        "terms": dict(Counter(terms_of(message, root_cause, " ".join(hashes)))),
    }


def pattern_row(meta: dict, path: Path) -> dict[str, Any]:
    classes = [str(c) for c in meta.get("error_classes") or []]
    return {
        "kind": "pattern",
        "title": required_text(meta, path, "title"),
        "pattern_type": str(meta.get("pattern_type") or ""),
        "error_class": classes[0] if classes else None,
        "error_classes": classes,
        "modules": [str(m) for m in meta.get("modules") or []],
        "tags": [str(m) for m in meta.get("modules") or []],
        "occurrences": integer(meta, path, "occurrences") or 0,
        "terms": {},
    }


def required_text(meta: dict, path: Path, key: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise KnowledgeDocError(path, f"the frontmatter field {key!r} is missing or empty")
    return value


def tags(meta: dict, path: Path, error_class: str, transaction: str) -> list[str]:
    value = meta.get("tags")
    if value is None:
        return sorted(extract_tags(error_class, transaction))
    if not isinstance(value, list):
        raise KnowledgeDocError(path, "the frontmatter field 'tags' must be a list")
    return sorted({str(t).lower() for t in value})


def integer(meta: dict, path: Path, key: str) -> int | None:
    value = meta.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise KnowledgeDocError(path, f"the frontmatter field {key!r} must be a whole number, not {value!r}")


def number(meta: dict, path: Path, key: str, default: float) -> float:
    value = meta.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise KnowledgeDocError(path, f"the frontmatter field {key!r} must be a number from 0 to 1, not {value!r}")
    return float(value)


def moment(meta: dict, path: Path, key: str) -> datetime | None:
    value = meta.get(key)
    if value is None or value == "":
        return None
    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise KnowledgeDocError(path, f"the frontmatter field {key!r} must be an ISO date and time, not {value!r}") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def file_hashes(meta: dict, path: Path) -> dict[str, str]:
    hashes = meta.get("file_hashes") or {}
    if not isinstance(hashes, dict):
        raise KnowledgeDocError(path, "the frontmatter field 'file_hashes' must map file paths to sha256 hashes")
    return {str(k): str(v) for k, v in sorted(hashes.items())}
