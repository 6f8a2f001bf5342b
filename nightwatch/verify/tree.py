"""The disposable tree a sandboxed run copies: the application's tracked files at the night's commit, with the
files a run adds or changes (a regression test, a fix) laid over them. Never the checkout itself, never `.git`,
never a file the code host withholds as a secret (config/master.key, .env)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator

from nightwatch.codehosts.base import secret_file_reason, secret_text_reason
from nightwatch.verify.cgroup import alive


class TreeError(RuntimeError):
    """The tree could not be prepared (a path outside it, a commit git does not know)."""


@contextmanager
def disposable_tree(base: Path, files: Iterable[str], overlay: dict[str, str] | None = None,
                    parent: Path | None = None) -> Iterator[Path]:
    """A temporary copy of `files` (paths relative to `base`, as git tracks them) with `overlay` written over it;
    removed on exit."""
    tmp = make_tree(base, files, parent, overlay=overlay)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def make_tree(base: Path, files: Iterable[str], parent: Path | None = None, prefix: str = "nightwatch-tree-",
              overlay: dict[str, str] | None = None) -> Path:
    """A copy of `files` (paths relative to `base`, as git tracks them) that a sandbox may read, with `overlay` written
    over it: no secret file by name or content, no link that leads outside it. The caller removes it."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        os.chmod(tmp, 0o755)  # the sandbox's unprivileged uid reads it
        for rel in files:
            if secret_file_reason(rel):
                continue
            source, target = base / rel, tmp / _inside(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                link = os.readlink(source)
                if not os.path.isabs(link):
                    os.symlink(link, target)
            elif source.is_file() and (data := _readable(source)) is not None:
                target.write_bytes(data)
                os.chmod(target, 0o755 if os.access(source, os.X_OK) else 0o644)
        _drop_escaping_links(tmp)
        _write_overlay(tmp, overlay or {})
        open_up(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


@contextmanager
def overlay_files(tree: Path, overlay: dict[str, str], parent: Path | None = None) -> Iterator[Path | None]:
    """A folder of the files a run writes over `tree` (a regression test, a fix), each checked as `disposable_tree`
    checks it: inside the repository, through no link of the tree that leads out, never onto a folder. None when the
    run adds nothing; removed on exit."""
    if not overlay:
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix="nightwatch-overlay-", dir=parent))
    try:
        base = tree.resolve()
        for rel in overlay:
            inside = tree / _inside(rel)
            if inside.is_dir() and not inside.is_symlink():
                raise TreeError(f"{rel!r} cannot be written in the tree: it is a folder")
            if any(folder.exists() and not folder.is_dir() for folder in inside.parents if folder.is_relative_to(tree)):
                raise TreeError(f"{rel!r} cannot be written in the tree: a file is where a folder must be")
            if not inside.parent.resolve().is_relative_to(base):
                raise TreeError(f"{rel!r} leads out of the repository through a link")
        _write_overlay(tmp, overlay)
        open_up(tmp)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def commit_tree(repo: Path, commit: str, overlay: dict[str, str] | None = None, parent: Path | None = None,
                timeout: float = 120.0) -> Iterator[Path]:
    """A temporary tree of `commit` of the git repository `repo` (git archive), with `overlay` over it."""
    tmp = Path(tempfile.mkdtemp(prefix="nightwatch-tree-", dir=parent))
    try:
        proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                              timeout=timeout, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
        if proc.returncode != 0:
            raise TreeError(f"git archive {commit[:12]} failed: {proc.stderr.decode(errors='replace').strip()[:300]}")
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            members = [m for m in tar.getmembers() if not secret_file_reason(m.name)]
            tar.extractall(tmp, members=members, filter="data")
        _drop_escaping_links(tmp)
        _write_overlay(tmp, overlay or {})
        open_up(tmp)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sweep_trees(folder: Path) -> None:
    """Night trees a process that has ended left behind (`night-tree-<pid>-*`): a crashed night's copy of a checkout."""
    for stale in folder.glob("night-tree-*-*"):
        if not alive(stale.name.split("-")[2]):
            shutil.rmtree(stale, ignore_errors=True)


def _inside(rel: str) -> str:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] == ".git":
        raise TreeError(f"{rel!r} is not a path inside the repository")
    return str(path)


def _write_overlay(root: Path, overlay: dict[str, str]) -> None:
    """Each file written where it is inside the tree: through no link that leads out, never onto a folder."""
    base = root.resolve()
    for rel, text in overlay.items():
        target = root / _inside(rel)
        if target.is_symlink():
            target.unlink()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.parent.resolve().is_relative_to(base):
                raise TreeError(f"{rel!r} leads out of the repository through a link")
            target.write_text(text, encoding="utf-8")
        except OSError as exc:  # a folder of that name, a file where a folder must be
            raise TreeError(f"{rel!r} cannot be written in the tree: {exc.strerror or exc}") from exc


def _drop_escaping_links(root: Path) -> None:
    """Every link of the copy that leads outside it, judged once all of them exist (a link checked alone when made can
    point outside through another link made after it: `a -> p/p/../..` with `p -> .`), is removed."""
    base = root.resolve()
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(base):
                path.unlink()


def _readable(path: Path) -> bytes | None:
    """The file's bytes, read once for both the check and the copy; None for a file whose text is itself a secret (the
    code host's own test, secret_text_reason: it withholds such a file from the model, so a test must not print it
    either) or that cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return None if secret_text_reason(data.decode("utf-8", errors="replace")) else data


def open_up(root: Path) -> None:
    """Folders 0755 and files world-readable: as root, the sandbox runs as an unprivileged uid that must read them."""
    os.chmod(root, 0o755)
    for folder, dirs, names in os.walk(root):
        for d in dirs:
            path = os.path.join(folder, d)
            if not os.path.islink(path):
                os.chmod(path, 0o755)
        for n in names:
            path = os.path.join(folder, n)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)
