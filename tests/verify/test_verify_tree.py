"""The disposable tree a sandboxed run copies, and what the sandbox mounts beside it: nothing a repository's links, a
fix's paths or a virtual environment's name lead to outside them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nightwatch.verify.testenv import _interpreter_of
from nightwatch.verify.tree import TreeError, disposable_tree

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"


def test_a_link_that_leads_out_only_once_another_link_exists_is_left_out_and_nothing_is_written_outside(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("X = 1\n")
    os.symlink("p/p/../..", repo / "a")  # checked alone, before `p` exists, it stays inside the tree
    os.symlink(".", repo / "p")
    os.symlink("app.py", repo / "alias.py")  # a link that stays inside is kept
    home = tmp_path / "home"
    (home / "sandbox").mkdir(parents=True)
    overlay = {"a/test_x.py": "def test_x(): pass\n"}  # through `a`, this landed two folders above the tree
    with disposable_tree(repo, ["a", "alias.py", "app.py", "p"], overlay, parent=home / "sandbox") as tree:
        assert (tree / "alias.py").is_symlink() and (tree / "alias.py").read_text() == "X = 1\n"
        assert not (tree / "a").is_symlink() and (tree / "a" / "test_x.py").is_file()
    assert sorted(p.name for p in home.iterdir()) == ["sandbox"]


@pytest.mark.parametrize("path", ["tests", "app.py/test_x.py"])
def test_a_test_written_onto_a_folder_or_under_a_file_is_a_tree_error(tmp_path: Path, path: str) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("")
    (repo / "app.py").write_text("")
    with pytest.raises(TreeError, match="cannot be written"):
        with disposable_tree(repo, ["app.py", "tests/test_a.py"], {path: "def test_x(): pass\n"}, parent=tmp_path):
            pass


def test_a_file_whose_content_is_a_secret_is_not_copied(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    (repo / "deploy" / "notes.txt").write_text(KEY)  # a name that says nothing: the content does
    (repo / "app.py").write_text("X = 1\n")
    with disposable_tree(repo, ["app.py", "deploy/notes.txt"], parent=tmp_path) as tree:
        assert (tree / "app.py").exists() and not (tree / "deploy" / "notes.txt").exists()


def test_an_environment_made_through_a_link_in_a_home_mounts_the_interpreters_prefix_never_the_home(tmp_path: Path,
                                                                                                    monkeypatch) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    os.symlink(os.path.realpath(sys.executable), home / "bin" / "python3")
    subprocess.run([str(home / "bin" / "python3"), "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True)
    monkeypatch.setenv("HOME", str(home))
    mounts = _interpreter_of(tmp_path / "env", tmp_path / "nightwatch-home")
    real = Path(os.path.realpath(sys.executable)).parent.parent
    assert mounts == ([] if real.is_relative_to("/usr") else [real])
    assert all(not home.resolve().is_relative_to(m) for m in mounts)
    if mounts:  # a prefix that holds NightWatch's home (wherever NIGHTWATCH_HOME points) is not mounted either
        assert _interpreter_of(tmp_path / "env", mounts[0] / "var" / "nightwatch") == []
