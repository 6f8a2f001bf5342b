"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Everything NightWatch persists goes through here: knowledge documents, the index, Parquet parts, the DuckDB
views file, checkpoints, batch ledgers, the Slack ledger, the file tracker, subflow inputs. The bytes go to a temporary file in the target's own folder (so the final
rename never crosses a filesystem), are flushed to disk with fsync, and then `os.replace` swaps the
file in one step. Temporary names start with a dot and end in `.tmp`, so globs such as
`**/*.parquet` or `errors/*.md` never pick up a file that is still being written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


def temp_path_for(path: Path) -> Path:
    """A unique temporary name beside `path`, invisible to the globs readers use."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path to write to; on success it replaces `path`, on error it is removed.

    For writers that insist on a file name of their own (pyarrow, DuckDB) rather than bytes.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_for(final)
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(final.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` atomically and durably; returns the final path."""
    final = Path(path)
    with atomic_target(final) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
    return final


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 `text` to `path` atomically (newlines kept as given)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable; not every platform lets a folder be opened, so best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (created if missing) for the block; other processes and threads that
    ask for it wait. The OS releases it if the process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
