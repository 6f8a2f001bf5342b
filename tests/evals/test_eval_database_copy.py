"""An eval worker's Prefect database starts as a copy of the one the eval's own API may be writing at that moment."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from nightwatch.eval_run import copy_database


def test_a_copy_taken_while_another_connection_writes_holds_every_committed_row(tmp_path: Path) -> None:
    source = tmp_path / "prefect.db"
    writer = sqlite3.connect(source)
    writer.execute("pragma journal_mode=wal")
    writer.execute("pragma wal_autocheckpoint=0")  # committed rows stay in the log, as between a busy API's checkpoints
    writer.execute("create table alembic_version (version_num text)")
    writer.executemany("insert into alembic_version values (?)", [(f"rev{i}",) for i in range(50)])
    writer.commit()
    writer.execute("begin immediate")
    writer.execute("insert into alembic_version values ('uncommitted')")  # a migration in progress
    try:
        assert copy_database(source, tmp_path / "copy.db")
        shutil.copyfile(source, tmp_path / "file-copy.db")
    finally:
        writer.rollback()
        writer.close()
    with sqlite3.connect(tmp_path / "copy.db") as copy:
        assert copy.execute("select count(*) from alembic_version").fetchone() == (50,)
    with sqlite3.connect(tmp_path / "file-copy.db") as plain:  # what copying the file gave: the log's rows are not in it
        assert plain.execute("select count(*) from sqlite_master").fetchone() == (0,)


def test_an_unreadable_database_gives_no_copy(tmp_path: Path) -> None:
    broken = tmp_path / "prefect.db"
    broken.write_bytes(b"not a database" * 100)
    assert not copy_database(broken, tmp_path / "copy.db")
    assert list(tmp_path.iterdir()) == [broken]
