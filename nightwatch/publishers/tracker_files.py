"""The offline tracker's index files (`tracker/index.json`, `tracker/pulls/index.json`), read and checked.

People edit these files by hand to try outcomes (docs/knowledge.md: "Trying outcomes by hand"), so every entry is checked when
it is read: a wrong or missing field is one CodeHostError naming the file, the entry and the field, never a KeyError
three steps later.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from nightwatch.codehosts.base import CodeHostError

# What an entry must hold: field -> (type, allowed values or None, required). Times are ISO 8601 (UTC when they name no
# zone). Entries NightWatch writes carry every required field; a person changes states, reasons, labels and times.
Fields = dict[str, tuple[type, frozenset[str] | None, bool]]
ISSUE_FIELDS: Fields = {
    "number": (int, None, True), "fingerprint": (str, None, True), "title": (str, None, True),
    "state": (str, frozenset({"open", "closed"}), True), "file": (str, None, True), "labels": (list, None, True),
    "state_reason": (str, None, False), "closed_at": (str, None, False),
}
PULL_FIELDS: Fields = {
    "number": (int, None, True), "fingerprint": (str, None, True), "folder": (str, None, True),
    "state": (str, frozenset({"open", "closed", "merged", "reverted"}), True),
    "merged_at": (str, None, False), "closed_at": (str, None, False),
}
PATH_FIELDS = ("file", "folder")  # inside the tracker's folder, never elsewhere
TIMESTAMPS = ("closed_at", "merged_at")


def tracker_entries(path: Path, key: str, fields: Fields) -> list[dict]:
    """The entries of one of the offline tracker's index files, each checked, numbers unique; a problem is one
    CodeHostError naming the file, the entry and the field."""
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))[key]
    except (ValueError, KeyError, TypeError) as exc:
        raise CodeHostError(f"{path}: not a JSON object with a list {key!r} ({exc}); fix or remove it") from exc
    if not isinstance(entries, list):
        raise CodeHostError(f"{path}: {key!r} is not a list; fix or remove it")
    seen: dict[int, int] = {}
    for i, entry in enumerate(entries, 1):
        _check(f"{path}: entry {i}", entry, fields)
        if entry["number"] in seen:
            raise CodeHostError(f"{path}: entry {i} (#{entry['number']}): field 'number' repeats entry {seen[entry['number']]}")
        seen[entry["number"]] = i
    return entries


def _check(where: str, entry: object, fields: Fields) -> None:
    if not isinstance(entry, dict):
        raise CodeHostError(f"{where} is not an object")
    number = entry.get("number")
    where += f" (#{number})" if type(number) is int else ""
    for name, (kind, allowed, required) in fields.items():
        value = entry.get(name)
        if value is None:
            if required:
                raise CodeHostError(f"{where}: field {name!r} is missing")
            continue
        if type(value) is not kind:  # exact: a JSON true is no number
            raise CodeHostError(f"{where}: field {name!r} is {type(value).__name__}, expected {kind.__name__}")
        if allowed is not None and value not in allowed:
            raise CodeHostError(f"{where}: field {name!r} is {value!r}, expected one of {', '.join(sorted(allowed))}")
    if not all(isinstance(label, str) for label in entry.get("labels") or []):
        raise CodeHostError(f"{where}: field 'labels' must list label names (strings)")
    for name in PATH_FIELDS:
        value = entry.get(name)
        if isinstance(value, str) and (value.startswith("/") or ".." in Path(value).parts):
            raise CodeHostError(f"{where}: field {name!r} must be a path inside the tracker's folder, not {value!r}")
    for name in TIMESTAMPS:
        try:
            moment(entry, name)
        except ValueError as exc:
            raise CodeHostError(f"{where}: field {name!r} is not an ISO 8601 time ({entry[name]!r})") from exc


def moment(entry: dict, name: str) -> datetime | None:
    """An entry's time field (ISO 8601; UTC when it names no zone), or None when it has none."""
    if not entry.get(name):
        return None
    value = datetime.fromisoformat(str(entry[name]))
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
