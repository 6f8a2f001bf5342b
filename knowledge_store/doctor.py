"""Damaged local state is moved aside, reported and rebuilt, never allowed to sink a night.

    findings = check_home(home, repair=True)    # `nightwatch doctor` (--check to only look)

What it looks at, and what repair means:
- knowledge documents whose frontmatter does not parse: moved to `quarantine/<UTC time>/knowledge/…`,
  then the index forgets them;
- `knowledge/index.duckdb` that does not open: moved aside and rebuilt from the documents (derived data);
- Parquet files under `metrics/` that do not open (truncated, not Parquet): moved to
  `quarantine/<UTC time>/metrics/…` so the views over the rest work again;
- `nightwatch.duckdb` that does not open: removed (it holds only views; the next night recreates it).

A night calls the pieces it needs where the damage would otherwise stop it (steps 0, 12 and the
views); `nightwatch doctor` runs them all on demand.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
from nightwatch.knowledge_store.documents import ERRORS_DIR, PATTERNS_DIR, KnowledgeDocError, read_doc
from nightwatch.knowledge_store.duck import views_problem
from nightwatch.knowledge_store.index import index_path, open_index

from nightwatch import clock

QUARANTINE = "quarantine"


@dataclass(frozen=True)
class Finding:
    what: str  # the file, relative to the home
    problem: str
    action: str  # what was done (or would be, with repair off)

    def line(self) -> str:
        return f"{self.what}: {self.problem} -> {self.action}"


def check_home(home: Path, repair: bool = True) -> list[Finding]:
    home = Path(home)
    findings = quarantine_documents(home, repair) + check_index(home, repair)
    if repair and any(f.what.startswith("knowledge/") for f in findings):
        with open_index(home / "knowledge") as index:
            index.sync()
    return findings + quarantine_parquet(home, repair) + check_views_file(home, repair)


def quarantine_documents(home: Path, repair: bool = True) -> list[Finding]:
    """Every document that does not parse (a night checks only those it is about to update: `quarantine_paths`)."""
    knowledge = home / "knowledge"
    paths = [p for folder in (ERRORS_DIR, PATTERNS_DIR) for p in sorted((knowledge / folder).glob("*.md"))]
    return quarantine_paths(home, paths, repair)


def quarantine_skipped(home: Path, skipped: Iterable[dict[str, str]]) -> list[Finding]:
    """Of the documents the index skipped, those whose frontmatter does not parse, moved aside (one that
    parses but lacks a field stays where a person can fix it; the index reports it)."""
    knowledge = home / "knowledge"
    return quarantine_paths(home, [knowledge / entry["file"] for entry in skipped])


def quarantine_paths(home: Path, paths: Iterable[Path], repair: bool = True) -> list[Finding]:
    findings = []
    for path in paths:
        try:
            read_doc(path)
        except KnowledgeDocError as exc:
            if path.is_file():
                findings.append(_quarantine(home, path, exc.problem, repair))
    return findings


def check_index(home: Path, repair: bool = True) -> list[Finding]:
    """An index that does not open is moved aside and rebuilt from the documents (it holds nothing else)."""
    path = index_path(home / "knowledge")
    if not path.exists():
        return []
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():  # a night or an analyst has it open: that is not damage
            return []
        if repair:
            with open_index(home / "knowledge"):
                pass  # opening moves the damaged file aside and rebuilds
        return [Finding("knowledge/index.duckdb", f"does not open ({str(exc)[:160]})",
                        "rebuilt from the documents" if repair else "rebuild")]
    return []


def quarantine_parquet(home: Path, repair: bool = True) -> list[Finding]:
    findings = []
    for path in sorted((home / "metrics").glob("**/*.parquet")):
        try:
            pq.read_metadata(path)
        except Exception as exc:  # pyarrow raises several kinds for a damaged file; all mean "unreadable"
            findings.append(_quarantine(home, path, f"not a readable Parquet file ({type(exc).__name__})", repair))
    return findings


def check_views_file(home: Path, repair: bool = True) -> list[Finding]:
    path = home / "nightwatch.duckdb"
    try:
        problem = views_problem(home)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():  # an analyst has it open: that is not damage
            return []
        problem = f"does not open ({str(exc)[:160]})"
    if problem in ("", "missing"):
        return []
    return _drop_views(path, problem, repair)


def _drop_views(path: Path, problem: str, repair: bool) -> list[Finding]:
    if repair:
        path.unlink(missing_ok=True)
    return [Finding(path.name, problem, "removed; the views are recreated" if repair else "remove")]


def _quarantine(home: Path, path: Path, problem: str, repair: bool) -> Finding:
    relative = path.relative_to(home).as_posix()
    if not repair:
        return Finding(relative, problem, "quarantine")
    target = home / QUARANTINE / f"{clock.now():%Y%m%dT%H%M%S}" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), target)
    return Finding(relative, problem, f"moved to {target.relative_to(home).as_posix()}")
