"""The knowledge index: a small YAML summary of every document, read first by knowledge search.

`index.yml` (seed 002, section 4.4, plus fingerprint, dates, file hashes and the fix state) lets
the research step score every past analysis without opening a single document; only the best few
are read in full. It is derived data: `rebuild_index` regenerates it from the documents at the end
of each night, skipping (and reporting) a malformed document rather than failing the whole night.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from knowledge_store.documents import ERRORS_DIR, PATTERNS_DIR, KnowledgeDocError, read_doc, section
from nightwatch.atomic import atomic_write_text
from nightwatch.fingerprint import fingerprint_of
from nightwatch.patterns import extract_tags

INDEX_FILE = "index.yml"
INDEX_VERSION = 1
ROOT_CAUSE_SUMMARY = 200


class KnowledgeIndexError(ValueError):
    """index.yml exists but cannot be used; rebuilding it from the documents fixes it."""


def empty_index() -> dict[str, Any]:
    return {
        "version": INDEX_VERSION,
        "last_updated": None,
        "total_solutions": 0,
        "total_patterns": 0,
        "solutions": [],
        "patterns": [],
        "skipped": [],
    }


def rebuild_index(knowledge_dir: Path, now: datetime | None = None) -> dict[str, Any]:
    """Scan errors/ and patterns/, write index.yml atomically, return it (malformed docs under "skipped")."""
    root = Path(knowledge_dir)
    solutions, skipped = _scan(root, ERRORS_DIR, solution_entry)
    patterns, skipped_patterns = _scan(root, PATTERNS_DIR, pattern_entry)
    index = empty_index() | {
        "last_updated": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        "total_solutions": len(solutions),
        "total_patterns": len(patterns),
        "solutions": solutions,
        "patterns": patterns,
        "skipped": skipped + skipped_patterns,
    }
    text = yaml.safe_dump(index, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    atomic_write_text(root / INDEX_FILE, text)
    return index


def _scan(root: Path, folder: str, build) -> tuple[list[dict], list[dict]]:  # type: ignore[no-untyped-def]
    entries, skipped = [], []
    for path in sorted((root / folder).glob("*.md")):
        try:
            entries.append(build(path, root))
        except KnowledgeDocError as exc:
            skipped.append({"file": path.relative_to(root).as_posix(), "reason": exc.problem})
    return entries, skipped


def solution_entry(path: Path, root: Path) -> dict[str, Any]:
    """One `solutions` entry; raises KnowledgeDocError when required fields are missing or mistyped."""
    meta, body = read_doc(path)
    error_class, transaction = _required_text(meta, path, "error_class"), _required_text(meta, path, "transaction")
    runs = meta.get("runs") if isinstance(meta.get("runs"), list) else []
    root_cause = str(meta.get("root_cause") or section(body, "Root Cause"))
    fingerprint = meta.get("fingerprint") or fingerprint_of(error_class, transaction, str(meta.get("message") or ""))
    return {
        "file": path.relative_to(root).as_posix(),
        "fingerprint": str(fingerprint),
        "error_class": error_class,
        "transaction": transaction,
        "fix_confidence": str(meta.get("fix_confidence") or "low"),
        "has_fix": bool(meta.get("has_fix", False)),
        "fix_confirmed": bool(meta.get("fix_confirmed", False)),
        "tags": _tags(meta, path, error_class, transaction),
        "first_detected": str(meta.get("first_detected") or ""),
        "last_run_id": str(meta.get("last_run_id") or meta.get("run_id") or ""),
        "run_count": len(runs) or 1,
        "occurrences": _integer(meta, path, "occurrences"),
        "issue_number": _optional_integer(meta, path, "issue_number"),
        "pr_number": _optional_integer(meta, path, "pr_number"),
        "root_cause": root_cause[:ROOT_CAUSE_SUMMARY],
        "file_hashes": _file_hashes(meta, path),
    }


def pattern_entry(path: Path, root: Path) -> dict[str, Any]:
    meta, _ = read_doc(path)
    return {
        "file": path.relative_to(root).as_posix(),
        "title": _required_text(meta, path, "title"),
        "pattern_type": str(meta.get("pattern_type") or ""),
        "error_classes": [str(c) for c in meta.get("error_classes") or []],
        "modules": [str(m) for m in meta.get("modules") or []],
        "occurrences": _integer(meta, path, "occurrences"),
    }


def _required_text(meta: dict, path: Path, key: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise KnowledgeDocError(path, f"the frontmatter field {key!r} is missing or empty")
    return value


def _tags(meta: dict, path: Path, error_class: str, transaction: str) -> list[str]:
    tags = meta.get("tags")
    if tags is None:
        return sorted(extract_tags(error_class, transaction))
    if not isinstance(tags, list):
        raise KnowledgeDocError(path, "the frontmatter field 'tags' must be a list")
    return [str(t).lower() for t in tags]


def _integer(meta: dict, path: Path, key: str) -> int:
    return _optional_integer(meta, path, key) or 0


def _optional_integer(meta: dict, path: Path, key: str) -> int | None:
    value = meta.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise KnowledgeDocError(path, f"the frontmatter field {key!r} must be a whole number, not {value!r}")


def _file_hashes(meta: dict, path: Path) -> dict[str, str]:
    hashes = meta.get("file_hashes") or {}
    if not isinstance(hashes, dict):
        raise KnowledgeDocError(path, "the frontmatter field 'file_hashes' must map file paths to sha256 hashes")
    return {str(k): str(v) for k, v in hashes.items()}


def load_index(knowledge_dir: Path) -> dict[str, Any]:
    """index.yml, or an empty index when there is none yet (a fresh machine has no knowledge)."""
    path = Path(knowledge_dir) / INDEX_FILE
    if not path.exists():
        return empty_index()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise KnowledgeIndexError(f"{path} cannot be read ({exc}); rebuild it with rebuild_index()") from exc
    if not isinstance(data, dict) or not isinstance(data.get("solutions", []), list):
        raise KnowledgeIndexError(f"{path} is not a knowledge index; rebuild it with rebuild_index()")
    return empty_index() | {k: v for k, v in data.items() if v is not None}
