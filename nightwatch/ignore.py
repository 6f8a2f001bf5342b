"""Ignore rules: errors the team has decided are not worth a night's attention.

An ignore file is YAML with one list:

    ignore:
      - pattern: "ActionController::RoutingError"
        match: exact            # contains (default) | exact | prefix | regex
        field: error_class      # error_class | message | transaction | level | any (default: the first three)
        reason: "Bots probing URLs; handled by the 404 page"

Matching is case-sensitive; a regex rule can say `(?i)` itself. Every rule needs a reason, so a
reader of the file knows why an error is hidden. A broken file is an error that names the file, the
rule and the problem, never a silently shorter list.

NightWatch ships its own noise rules (noise.yml: vulnerability scanners, unknown formats, bots), applied
to every source after the team's file; `name` labels a rule in the report, which says what each dropped.

Regex rules run on the `regex` engine with a time limit per match, over at most MATCH_CHARS of each
field: a catastrophic pattern such as `(a+)+$` against a long crafted message costs one time-out and
a warning, after which the rule is switched off for the rest of the night, never a hung night.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import regex
import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator, model_validator

from nightwatch import safe_yaml
from nightwatch.models import ErrorGroup

MatchKind = Literal["contains", "exact", "prefix", "regex"]
FieldName = Literal["error_class", "message", "transaction", "level", "any"]
_FIELDS: tuple[str, ...] = ("error_class", "message", "transaction")
MATCH_CHARS = 16_384  # a field longer than this is matched on its first MATCH_CHARS characters
DEFAULT_NOISE_FILE = Path(__file__).resolve().parent / "noise.yml"
MATCH_TIMEOUT_S = 0.25  # per regex search; a rule that times out once is off for the rest of the night


class InvalidIgnoreRules(Exception):
    """The ignore file cannot be used as written; the message says where and why."""


class IgnoreRule(BaseModel):
    """One rule: hide errors whose chosen field matches the pattern."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    match: MatchKind = "contains"
    field: FieldName = "any"
    reason: str
    name: str = ""
    _regex: Any = PrivateAttr(default=None)
    _timed_out: str | None = PrivateAttr(default=None)

    @field_validator("pattern", "reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _compile(self) -> IgnoreRule:
        if self.match == "regex":
            try:
                self._regex = regex.compile(self.pattern, flags=regex.VERSION0)
            except (regex.error, re.error) as exc:
                raise ValueError(f"invalid regex {self.pattern!r}: {exc}") from None
        return self

    def matches(self, error: ErrorGroup) -> bool:
        fields = _FIELDS if self.field == "any" else (self.field,)
        return any(self._matches_text(getattr(error, name) or "") for name in fields)

    @property
    def label(self) -> str:
        """How the report names the rule: its name, else its pattern."""
        return self.name or self.pattern

    @property
    def timed_out(self) -> str | None:
        """Why this rule was switched off for the night (its regex ran past the time limit), if it was."""
        return self._timed_out

    def _matches_text(self, text: str) -> bool:
        if self.match == "exact":
            return text == self.pattern
        if self.match == "prefix":
            return text.startswith(self.pattern)
        if self.match == "regex":
            return self._search(text[:MATCH_CHARS])
        return self.pattern in text

    def _search(self, text: str) -> bool:
        if self._regex is None or self._timed_out:
            return False
        try:
            return self._regex.search(text, timeout=MATCH_TIMEOUT_S) is not None
        except TimeoutError:
            self._timed_out = (f"ignore rule {self.pattern!r} ({self.reason}) took over {MATCH_TIMEOUT_S:g} s on a "
                               f"{len(text):,}-character text and is off for the rest of this night: simplify its regex")
            return False


def load_ignore_rules(path: Path | None) -> list[IgnoreRule]:
    """Rules of an ignore file; no path means no rules, an empty `ignore:` list is fine too."""
    if path is None:
        return []
    entries = _entries(Path(path))
    rules: list[IgnoreRule] = []
    problems: list[str] = []
    for index, entry in enumerate(entries):
        try:
            rules.append(_rule(entry))
        except (ValidationError, TypeError) as exc:
            problems.append(f"ignore[{index}] ({_describe(entry)}): {_explain(exc)}")
    if problems:
        raise InvalidIgnoreRules(f"ignore file {path} has {len(problems)} invalid rule(s):\n  " + "\n  ".join(problems))
    return rules


def noise_rules(ignore_file: Path | None, defaults: bool = True) -> list[IgnoreRule]:
    """The rules of a night: the team's ignore file first, then NightWatch's shipped noise rules."""
    return load_ignore_rules(ignore_file) + (load_ignore_rules(DEFAULT_NOISE_FILE) if defaults else [])


def _entries(path: Path) -> list[Any]:
    try:
        document = safe_yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidIgnoreRules(f"ignore file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidIgnoreRules(f"ignore file {path} cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise InvalidIgnoreRules(f"ignore file {path} is not valid YAML: {exc}") from None
    if document is None:
        return []
    if not isinstance(document, dict):
        raise InvalidIgnoreRules(
            f"ignore file {path} must be a mapping with an 'ignore:' list, not a {type(document).__name__}"
        )
    if unknown := sorted(set(map(str, document)) - {"ignore"}):
        raise InvalidIgnoreRules(
            f"ignore file {path}: unknown top-level key(s) {', '.join(unknown)} (only 'ignore' is allowed)"
        )
    entries = document.get("ignore") or []
    if not isinstance(entries, list):
        raise InvalidIgnoreRules(
            f"ignore file {path}: 'ignore' must be a list of rules, not a {type(entries).__name__}"
        )
    return entries


def _rule(entry: Any) -> IgnoreRule:
    if not isinstance(entry, dict):
        raise TypeError(f"a rule must be a mapping with pattern, match, field and reason, not a {type(entry).__name__}")
    return IgnoreRule.model_validate(entry)


def _describe(entry: Any) -> str:
    pattern = entry.get("pattern") if isinstance(entry, dict) else None
    return f"pattern {pattern!r}" if pattern is not None else "no pattern"


def _explain(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    return "; ".join(_explain_one(error) for error in exc.errors())


def _explain_one(error: Any) -> str:
    key = ".".join(map(str, error["loc"]))
    kind = error["type"]
    if kind == "missing":
        return f"missing required key '{key}'"
    if kind == "extra_forbidden":
        return f"unknown key '{key}' (allowed: pattern, match, field, reason, name)"
    if kind == "literal_error" and key == "match":
        return f"unknown match kind {error['input']!r} (expected contains, exact, prefix or regex)"
    if kind == "literal_error" and key == "field":
        return f"unknown field {error['input']!r} (expected error_class, message, transaction, level or any)"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"'{key}' {message}" if key else message


def apply_ignore_rules(
    errors: list[ErrorGroup], rules: list[IgnoreRule]
) -> tuple[list[ErrorGroup], list[tuple[ErrorGroup, IgnoreRule]]]:
    """Split errors into (kept, ignored with the first rule that matched)."""
    kept: list[ErrorGroup] = []
    ignored: list[tuple[ErrorGroup, IgnoreRule]] = []
    for error in errors:
        rule = next((r for r in rules if r.matches(error)), None)
        if rule is None:
            kept.append(error)
        else:
            ignored.append((error, rule))
    return kept, ignored
