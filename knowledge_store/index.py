"""The knowledge index: one DuckDB table row per knowledge document, so search costs the same at 100 or 100,000.

`<knowledge>/index.duckdb` is derived data; the Markdown documents stay the source that people read
and edit. It holds:
- `documents`: one row per document (error documents keyed by fingerprint, and patterns) with what
  search, triage and pattern detection need, the document's path, content hash and file stat;
- `doc_tags` (document, tag) for indexed lookup; each document's terms and their counts as two lists,
  and `vocabulary` (term, how many documents hold it) for BM25 (knowledge_store/text_relevance.py);
- `skipped`: documents that could not be read, with the reason (reported, never fatal);
- `meta`: the index version and a generation counter that moves on every change.

A night upserts only the documents it wrote (`upsert`), and `sync` picks up hand edits: it stats
every document and re-reads only those whose size or modification time moved, keeping the new
content only when its hash differs. `rebuild` re-reads everything (`nightwatch knowledge rebuild`).
An index written by another version, or one that is not a DuckDB file, is rebuilt from the documents.

Connections are short: each use opens the file and closes it, so two processes (a retry on another
worker, an analyst's rebuild) wait for each other briefly instead of holding a lock all night.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from nightwatch.knowledge_store.documents import ERRORS_DIR, PATTERNS_DIR, KnowledgeDocError
from nightwatch.knowledge_store.entries import content_hash, read_entry, tag_id, token_id
from nightwatch.knowledge_store.schema import duckdb_type
from nightwatch.knowledge_store.text_relevance import Corpus
from pydantic import BaseModel

from nightwatch import clock
from nightwatch.outcomes import Filed

INDEX_FILE = "index.duckdb"
INDEX_VERSION = "8"
LEGACY_INDEX = "index.yml"
LOCK_WAIT_S = 30.0
SYNC_CHUNK = 2_000
_OPEN_LOCK = threading.Lock()

DOCUMENT_SCHEMA = pa.schema([
    ("doc_id", pa.int64()), ("path", pa.string()), ("kind", pa.string()), ("fingerprint", pa.string()),
    ("error_class", pa.string()), ("transaction", pa.string()), ("transaction_key", pa.string()), ("module", pa.string()),
    ("message", pa.string()), ("root_cause", pa.string()), ("summary", pa.string()), ("outcome", pa.string()),
    ("tags", pa.list_(pa.string())), ("files", pa.list_(pa.string())),
    ("file_hashes", pa.string()), ("fix_confidence", pa.string()), ("has_fix", pa.bool_()), ("fix_confirmed", pa.bool_()),
    ("fix_state", pa.string()), ("trust", pa.float64()), ("fix_merged_at", pa.timestamp("us", tz="UTC")),
    ("regressed_at", pa.timestamp("us", tz="UTC")),
    ("first_detected", pa.string()), ("last_run_id", pa.string()), ("run_count", pa.int64()), ("occurrences", pa.int64()),
    ("issue_number", pa.int64()), ("pr_number", pa.int64()), ("issue_state", pa.string()), ("pr_state", pa.string()),
    ("tracker_issue", pa.string()), ("tracker_state", pa.string()), ("title", pa.string()), ("pattern_type", pa.string()),
    ("error_classes", pa.list_(pa.string())), ("modules", pa.list_(pa.string())), ("content_hash", pa.string()),
    ("mtime_ns", pa.int64()), ("size", pa.int64()), ("doc_len", pa.int64()), ("indexed_at", pa.timestamp("us", tz="UTC")),
    ("term_ids", pa.list_(pa.int64())), ("term_counts", pa.list_(pa.int32())),
])
TAG_SCHEMA = pa.schema([("doc_id", pa.int64()), ("tag_id", pa.int64())])



class KnowledgeIndexError(RuntimeError):
    """The knowledge index cannot be opened (held by another program past the wait, or damaged beyond a rebuild)."""


@dataclass
class SyncResult:
    """What a sync or rebuild changed: documents added or updated, removed, and those skipped (with reasons)."""

    upserted: int = 0
    removed: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    rebuilt: str = ""

    def line(self) -> str:
        text = f"{self.upserted} document(s) indexed, {self.removed} removed"
        text += f", {len(self.skipped)} skipped" if self.skipped else ""
        return text + (f" (rebuilt: {self.rebuilt})" if self.rebuilt else "")


class KnowledgeState(BaseModel):
    """What a task needs to use the index: where it is, and its generation (a cache key that moves on change)."""

    path: str
    generation: int
    solutions: int = 0
    patterns: int = 0
    skipped: int = 0


def index_path(knowledge_dir: Path) -> Path:
    return Path(knowledge_dir) / INDEX_FILE


@contextlib.contextmanager
def open_index(knowledge_dir: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[KnowledgeIndex]:
    """The index of `knowledge_dir`, created (and filled from the documents) when it is new or unusable."""
    root = Path(knowledge_dir)
    root.mkdir(parents=True, exist_ok=True)
    con, reason = _connect(index_path(root), wait_s)
    try:
        index = KnowledgeIndex(root, con)
        if reason or index.version() != INDEX_VERSION:
            index.reset(reason or f"index version {index.version() or 'none'} is not {INDEX_VERSION}")
        yield index
    finally:
        con.close()


def _connect(path: Path, wait_s: float) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A read-write connection, waiting while another process holds the file; a damaged file is moved aside."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with _OPEN_LOCK:
                return duckdb.connect(str(path)), ""
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                if time.monotonic() >= deadline:
                    raise KnowledgeIndexError(f"{path} is held by another process: {exc}") from exc
                time.sleep(0.2)
                continue
            return _replace_damaged(path, exc)
        except duckdb.Error as exc:
            return _replace_damaged(path, exc)


def _replace_damaged(path: Path, exc: Exception) -> tuple[duckdb.DuckDBPyConnection, str]:
    aside = path.with_name(f"{path.name}.damaged-{clock.now():%Y%m%dT%H%M%S}")
    os.replace(path, aside)
    Path(f"{path}.wal").unlink(missing_ok=True)
    try:
        return duckdb.connect(str(path)), f"{path.name} could not be opened ({str(exc)[:200]}); moved to {aside.name}"
    except duckdb.Error as again:
        raise KnowledgeIndexError(f"{path} cannot be created: {again}") from again


class KnowledgeIndex:
    """One open connection to the index; methods are safe to call from the night's threads (a cursor each)."""

    def __init__(self, root: Path, con: duckdb.DuckDBPyConnection) -> None:
        self.root, self._con = root, con
        self.rebuilt: SyncResult | None = None  # set when opening had to rebuild the index from the documents

    @contextlib.contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self._con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    # ------------------------------------------------------------------ state

    def version(self) -> str:
        with self.cursor() as cur:
            # duckdb_tables() rather than information_schema: the same answer at a tenth of the cost, on every open
            if not cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'meta'").fetchone()[0]:
                return ""
            row = cur.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        return row[0] if row else ""

    def generation(self) -> int:
        """Moves on every change; a task cached on it is re-run when the knowledge changed."""
        return int(self.meta("generation") or 0)

    def meta(self, key: str) -> str | None:
        with self.cursor() as cur:
            row = cur.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.cursor() as cur:
            cur.execute("DELETE FROM meta WHERE key = ?", [key])
            cur.execute("INSERT INTO meta VALUES (?, ?)", [key, value])

    def counts(self) -> dict[str, int]:
        with self.cursor() as cur:
            rows = dict(cur.execute("SELECT kind, count(*) FROM documents GROUP BY kind").fetchall())
            skipped = cur.execute("SELECT count(*) FROM skipped").fetchone()[0]
        return {"solutions": rows.get("solution", 0), "patterns": rows.get("pattern", 0), "skipped": skipped}

    def state(self) -> KnowledgeState:
        return KnowledgeState(path=str(self.root), generation=self.generation(), **self.counts())

    def paths_of(self, fingerprints: Iterable[str]) -> dict[str, Path]:
        """{fingerprint: document path} of the error documents these fingerprints have."""
        rows = self.query("SELECT fingerprint, path FROM documents WHERE kind = 'solution' AND list_contains($f, fingerprint)",
                          {"f": sorted(set(fingerprints))})
        return {row["fingerprint"]: self.root / row["path"] for row in rows}

    def skipped(self) -> list[dict[str, str]]:
        with self.cursor() as cur:
            rows = cur.execute("SELECT path, reason FROM skipped ORDER BY path").fetchall()
        return [{"file": path, "reason": reason} for path, reason in rows]

    def reset(self, why: str) -> SyncResult:
        """Drop everything and index the documents again."""
        with self.cursor() as cur:
            for table in ("documents", "doc_tags", "vocabulary", "skipped", "meta"):
                cur.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _ddl():
                cur.execute(statement)
            cur.execute("INSERT INTO meta VALUES ('version', ?), ('generation', '0')", [INDEX_VERSION])
        Path(self.root / LEGACY_INDEX).unlink(missing_ok=True)  # the YAML index of earlier versions
        result = self.sync()
        result.rebuilt = why
        self.rebuilt = result
        return result

    def rebuild(self) -> SyncResult:
        return self.reset("asked for")

    # ------------------------------------------------------------------ writing

    def sync(self) -> SyncResult:
        """Index documents added, edited or removed by hand since the index last saw them."""
        on_disk = _stat_documents(self.root)
        with self.cursor() as cur:
            known = {p: (m, s, h) for p, m, s, h in cur.execute(
                "SELECT path, mtime_ns, size, content_hash FROM documents "
                "UNION ALL SELECT path, mtime_ns, size, NULL FROM skipped").fetchall()}
        removed = sorted(set(known) - set(on_disk))
        moved = [p for p, stat in on_disk.items() if known.get(p, (None, None, None))[:2] != stat]
        unchanged = [p for p in moved if p in known and known[p][2] and _hash_of(self.root / p) == known[p][2]]
        changed = [self.root / p for p in moved if p not in unchanged]
        result = self.upsert(changed[:SYNC_CHUNK], removed=removed)
        for start in range(SYNC_CHUNK, len(changed), SYNC_CHUNK):  # a first index reads its documents a chunk at a time
            more = self.upsert(changed[start:start + SYNC_CHUNK])
            result.upserted, result.skipped = result.upserted + more.upserted, result.skipped + more.skipped
        if unchanged:
            self._restat(unchanged, on_disk)
        return result

    def upsert(self, paths: Iterable[Path], removed: Iterable[str] = ()) -> SyncResult:
        """Read these documents and replace their rows (a path that no longer exists is removed)."""
        rows, skipped, gone = [], [], list(removed)
        named = {_relative(Path(p), self.root): Path(p) for p in paths}
        for relative, path in named.items():  # a document named twice is read (and inserted) once
            if path.is_symlink():  # it may point anywhere on the machine: never read into a prompt
                skipped.append({"file": relative, "reason": "a symbolic link (documents are read only as files in the "
                                "knowledge folder)", **_stat_of(path)})
                continue
            if not path.exists():
                gone.append(relative)
                continue
            try:
                rows.append(read_entry(path, self.root))
            except KnowledgeDocError as exc:
                skipped.append({"file": relative, "reason": exc.problem, **_stat_of(path)})
        if rows or skipped or gone:
            self._write(rows, skipped, [r["path"] for r in rows] + [s["file"] for s in skipped] + gone)
        return SyncResult(upserted=len(rows), removed=len(gone), skipped=[{k: s[k] for k in ("file", "reason")} for s in skipped])

    def _write(self, rows: list[dict[str, Any]], skipped: list[dict[str, Any]], paths: list[str]) -> None:
        documents, tags = _tables(rows, clock.now())
        with self.cursor() as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                cur.register("touched", pa.table({"path": pa.array(paths, pa.string())}))
                cur.register("incoming_documents", documents)
                cur.register("incoming_doc_tags", tags)
                for statement in _REPLACE:
                    cur.execute(statement)
                for entry in skipped:
                    cur.execute("INSERT INTO skipped VALUES (?, ?, ?, ?)",
                                [entry["file"], entry["reason"], entry["mtime_ns"], entry["size"]])
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def _restat(self, paths: list[str], on_disk: dict[str, tuple[int, int]]) -> None:
        """Documents touched but not changed (same hash): remember their new stat so they are not re-read."""
        with self.cursor() as cur:
            cur.executemany("UPDATE documents SET mtime_ns = ?, size = ? WHERE path = ?",
                            [[*on_disk[p], p] for p in paths])

    # ------------------------------------------------------------------ reading

    def query(self, sql: str, parameters: dict[str, Any] | list[Any] | None = None, tuples: bool = False) -> list[Any]:
        """Rows of a read query as dicts (the index's own searches use this)."""
        with self.cursor() as cur:
            result = cur.execute(sql, parameters or {})
            if tuples:
                return result.fetchall()
            names = [d[0] for d in result.description]
            return [dict(zip(names, row)) for row in result.fetchall()]

    def candidates(self, fingerprint: str, error_class: str, transaction_key: str,
                   tags: list[int]) -> dict[int, tuple[bool, bool, bool]]:
        """{doc_id: (same fingerprint, same class, same transaction)} of the error documents found by indexed lookup:
        the same fingerprint, class or transaction, or one of `tags` (tag ids). Each branch uses its own index."""
        flags = "kind = 'solution' AS solution, fingerprint = $f, error_class = $c, transaction_key = $t"
        rows = self.query(
            f"SELECT doc_id, {flags} FROM documents WHERE fingerprint = $f UNION ALL "
            f"SELECT doc_id, {flags} FROM documents WHERE error_class = $c UNION ALL "
            f"SELECT doc_id, {flags} FROM documents WHERE transaction_key = $t"
            + (" UNION ALL SELECT DISTINCT t.doc_id, d.kind = 'solution', false, false, false FROM doc_tags t "
               f"JOIN documents d ON d.doc_id = t.doc_id WHERE t.tag_id IN ({_ints(tags)})"
               if tags else ""),
            {"f": fingerprint, "c": error_class, "t": transaction_key}, tuples=True)
        found: dict[int, tuple[bool, bool, bool]] = {}
        for doc, solution, *same in rows:
            if solution:
                found[doc] = tuple(a or b for a, b in zip(same, found.get(doc, (False, False, False))))  # type: ignore[assignment]
        return found

    def shared_tags(self, ids: list[int], tags: list[int]) -> dict[int, int]:
        """{doc_id: how many of `tags` it holds} for these documents."""
        if not ids or not tags:
            return {}
        rows = self.query(f"SELECT doc_id, count(*) AS n FROM doc_tags WHERE doc_id IN ({_ints(ids)}) "
                          f"AND tag_id IN ({_ints(tags)}) GROUP BY doc_id")
        return {row["doc_id"]: row["n"] for row in rows}

    def rows_by_id(self, ids: list[int], columns: str = "*") -> list[dict[str, Any]]:
        """Documents by id, through the id index (the ids are this index's own integers)."""
        return self.query(f"SELECT {columns} FROM documents WHERE doc_id IN ({_ints(ids)})") if ids else []

    def corpus(self, ids: list[int]) -> Corpus:
        """The corpus figures BM25 needs, with the document counts of these term (and tag) ids."""
        rows = self.query(f"SELECT term_id, df FROM vocabulary WHERE term_id IN ({_ints(ids) or 'NULL'}) UNION ALL "
                          "SELECT NULL, CAST(value AS DOUBLE) FROM meta WHERE key = 'documents' UNION ALL "
                          "SELECT -1, CAST(value AS DOUBLE) FROM meta WHERE key = 'average_length'")
        df = {row["term_id"]: row["df"] for row in rows}
        return Corpus(int(df.pop(None, 0) or 0), float(df.pop(-1, 0) or 0), {k: int(v) for k, v in df.items()})

    def filed(self) -> list[Filed]:
        """Every analysis with an issue, a PR or an error-tracker issue, and the states its document last recorded."""
        return [Filed.model_validate(row) for row in self.query(
            "SELECT fingerprint, path, issue_number, pr_number, issue_state, pr_state, fix_state, tracker_issue, "
            "tracker_state FROM documents WHERE kind = 'solution' AND (issue_number IS NOT NULL OR pr_number IS NOT NULL "
            "OR tracker_issue IS NOT NULL) ORDER BY path")]

    def history(self, classes: Iterable[str], modules: Iterable[str]) -> list[dict[str, Any]]:
        """Error documents of these classes or modules: what pattern detection compares tonight with."""
        return self.query(
            "SELECT fingerprint, error_class, \"transaction\", occurrences, has_fix, fix_confidence, run_count, path AS file "
            "FROM documents WHERE kind = 'solution' AND (list_contains($classes, error_class) "
            "OR list_contains($modules, module)) ORDER BY path",
            {"classes": sorted(set(classes)), "modules": sorted(set(modules))})

    def snapshot(self) -> pa.Table:
        """Every document's row in the columns of the `knowledge_index` metrics table (schema_version aside)."""
        with self.cursor() as cur:
            return cur.sql(
                "SELECT kind, path AS file, fingerprint, error_class, \"transaction\", title, fix_confidence, has_fix, "
                "fix_confirmed, tags, first_detected, last_run_id, run_count, occurrences, issue_number, pr_number, "
                "root_cause, CAST(CAST(file_hashes AS JSON) AS MAP(VARCHAR, VARCHAR)) AS file_hashes, indexed_at, "
                "fix_state, trust, fix_merged_at FROM documents ORDER BY path").to_arrow_table()


def _ddl() -> list[str]:
    def columns(schema: pa.Schema) -> str:
        return ", ".join(f'"{f.name}" {duckdb_type(f.type)}' for f in schema)

    return [
        "CREATE TABLE meta (key VARCHAR, value VARCHAR)",
        f"CREATE TABLE documents ({columns(DOCUMENT_SCHEMA)})",
        f"CREATE TABLE doc_tags ({columns(TAG_SCHEMA)})",
        "CREATE TABLE vocabulary (term_id BIGINT, df BIGINT)",
        "CREATE TABLE skipped (path VARCHAR, reason VARCHAR, mtime_ns BIGINT, size BIGINT)",
        "CREATE INDEX documents_path ON documents (path)",
        "CREATE INDEX documents_fingerprint ON documents (fingerprint)",
        "CREATE INDEX documents_doc_id ON documents (doc_id)",
        "CREATE INDEX documents_class ON documents (error_class)",
        "CREATE INDEX documents_transaction ON documents (transaction_key)",
        "CREATE INDEX doc_tags_doc ON doc_tags (doc_id)",
        "CREATE INDEX doc_tags_tag ON doc_tags (tag_id)",
        "CREATE INDEX vocabulary_term ON vocabulary (term_id)",
    ]


# One upsert, inside a transaction: the touched documents' terms leave the vocabulary, their rows go, the new rows
# come in with their tags and terms, and the corpus figures BM25 needs (documents, average length) are refreshed.
_REPLACE = [
    """UPDATE vocabulary SET df = vocabulary.df - gone.n FROM (
           SELECT term_id, count(*) AS n FROM (
               SELECT unnest(term_ids) AS term_id FROM documents WHERE path IN (SELECT path FROM touched)
               UNION ALL SELECT tag_id FROM doc_tags WHERE doc_id IN (
                   SELECT doc_id FROM documents WHERE path IN (SELECT path FROM touched)))
           GROUP BY term_id) AS gone
       WHERE vocabulary.term_id = gone.term_id""",
    "DELETE FROM doc_tags WHERE doc_id IN (SELECT doc_id FROM documents WHERE path IN (SELECT path FROM touched))",
    "DELETE FROM documents WHERE path IN (SELECT path FROM touched)",
    "DELETE FROM skipped WHERE path IN (SELECT path FROM touched)",
    "INSERT INTO documents SELECT * FROM incoming_documents",
    "INSERT INTO doc_tags SELECT * FROM incoming_doc_tags",
    """CREATE TEMP TABLE arriving AS SELECT term_id, count(*) AS n FROM (
           SELECT unnest(term_ids) AS term_id FROM incoming_documents UNION ALL SELECT tag_id FROM incoming_doc_tags)
       GROUP BY term_id""",
    "UPDATE vocabulary SET df = vocabulary.df + arriving.n FROM arriving WHERE vocabulary.term_id = arriving.term_id",
    "INSERT INTO vocabulary SELECT term_id, n FROM arriving WHERE term_id NOT IN (SELECT term_id FROM vocabulary)",
    "DROP TABLE arriving",
    "DELETE FROM vocabulary WHERE df <= 0",
    "DELETE FROM meta WHERE key IN ('documents', 'average_length')",
    """INSERT INTO meta SELECT 'documents', CAST(count(*) AS VARCHAR) FROM documents WHERE kind = 'solution'
       UNION ALL SELECT 'average_length', CAST(coalesce(avg(doc_len), 0) AS VARCHAR) FROM documents WHERE kind = 'solution'""",
    "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) WHERE key = 'generation'",
]


def _tables(rows: list[dict[str, Any]], now: datetime) -> tuple[pa.Table, pa.Table]:
    documents, tags = [], []
    for row in rows:
        terms = row.get("terms") or {}
        documents.append({**{k: row.get(k) for k in DOCUMENT_SCHEMA.names},
                          "file_hashes": json.dumps(row["file_hashes"]) if "file_hashes" in row else None,
                          "doc_len": sum(terms.values()), "indexed_at": now,
                          "term_ids": [token_id(t) for t in terms], "term_counts": list(terms.values())})
        tags += [{"doc_id": row["doc_id"], "tag_id": tag_id(t)} for t in row.get("tags") or []]
    return pa.Table.from_pylist(documents, DOCUMENT_SCHEMA), pa.Table.from_pylist(tags, TAG_SCHEMA)


def _ints(values: Iterable[int]) -> str:
    """A SQL list of integers (ids this module computed): literal, so DuckDB can use its indexes."""
    return ", ".join(str(int(v)) for v in values)


def _stat_documents(root: Path) -> dict[str, tuple[int, int]]:
    """{relative path: (mtime_ns, size)} of every document, from one directory listing per folder."""
    found: dict[str, tuple[int, int]] = {}
    for folder in (ERRORS_DIR, PATTERNS_DIR):
        try:
            entries = os.scandir(root / folder)
        except FileNotFoundError:
            continue
        with entries:
            for entry in entries:
                if entry.name.endswith(".md") and not entry.name.startswith(".") and entry.is_file():
                    stat = entry.stat()
                    found[f"{folder}/{entry.name}"] = (stat.st_mtime_ns, stat.st_size)
    return found


def _relative(path: Path, root: Path) -> str:
    """`path` relative to the knowledge folder, as the index names it (a link in the folder names itself, not its
    target)."""
    for inner, outer in ((Path(os.path.abspath(path)), Path(os.path.abspath(root))), (path.resolve(), root.resolve())):
        try:
            return inner.relative_to(outer).as_posix()
        except ValueError:
            continue
    raise ValueError(f"{path} is not inside the knowledge folder {root}")


def _stat_of(path: Path) -> dict[str, int | None]:
    try:
        stat = path.stat()
    except OSError:
        return {"mtime_ns": None, "size": None}
    return {"mtime_ns": stat.st_mtime_ns, "size": stat.st_size}


def _hash_of(path: Path) -> str | None:
    try:
        return content_hash(path.read_bytes())
    except OSError:
        return None
