"""Blame looks through commits that only reformatted a Python file (black, autopep8...), as it looks through
whitespace-only edits: checked on what formatters wrote in real history, and on what only looks like formatting."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nightwatch.codehosts.blame import reformatted
from nightwatch.codehosts.formatting import formatting_only
from nightwatch.codehosts.local import LocalRepoHost, run_git
from nightwatch.evaluation import load_case, prepare_repository

EVALS = Path(__file__).resolve().parents[1] / "evals"

PYTHON_BEFORE = """\
from app.models import db, Users, Solves
def load(user_id, name='x'):
  if user_id:
    user = db.session.query(Users).filter_by(id=user_id).first() # the row
    return {'success': False, 'errors': ['no']}, 400
  rows = [
      1, 2
  ]
  return user
"""
PYTHON_AFTER = '''\
from app.models import (
    db,
    Users,
    Solves,
)


def load(user_id, name="x"):
    if user_id:
        user = (
            db.session.query(Users)
            .filter_by(id=user_id)
            .first()
        )
        return (
            {"success": False, "errors": ["no"]},
            400,
        )
    rows = [1, 2,]
    return user
'''



def test_what_black_and_autopep8_do_is_formatting() -> None:
    assert formatting_only(PYTHON_BEFORE, PYTHON_AFTER, "app/views.py")
    assert formatting_only("x = 1\n", "# why x is one\nx = 1  # see #12\n\n", "app/a.py")  # comments only


@pytest.mark.parametrize(("before", "after"), [
    ("if a:\n    b()\n    c()\n", "if a:\n    b()\nc()\n"),  # a statement left its block
    ("x = (y,)\n", "x = (y)\n"),  # a one-element tuple became its element
    ("def f():\n    return ()\n", "def f():\n    return\n"),  # an empty tuple became None
    ("x = -(a + b)\n", "x = -a + b\n"),  # precedence
    ("ok = not (a or b)\n", "ok = not a or b\n"),
    ("v = d[k,]\n", "v = d[k]\n"),  # a subscript by a one-element tuple
    ("print({(1,): 't', 1: 'i'}[1,])\n", "print({(1,): 't', 1: 'i'}[1])\n"),
    ("match v:\n    case (x,):\n        pass\n", "match v:\n    case (x):\n        pass\n"),  # a sequence pattern
    ("s = '\"\"x\"\"'\n", 's = """x"""\n'),  # the quotes were part of the value
    ("s = 'a\\n'\n", 's = "a\\\\n"\n'),  # an escape is content
    ("import b\nimport a\n", "import a\nimport b\n"),  # import order is execution order
    ("x = (y := 3)\n", "x = y := 3\n"),  # the file no longer parses
    ("print(1)  # a\n", "print(1)  # a\x00\n"),  # a NUL byte: it no longer compiles
    ("if 1:\n        x = 1\n        y = 2\n", "if 1:\n\tx = 1\n        y = 2\n"),  # tabs and spaces: TabError
    ("#!/usr/bin/env python3\nx = 1\n", "#!/usr/bin/env python2\nx = 1\n"),  # another interpreter
    ("# -*- coding: latin-1 -*-\nx = 1\n", "# -*- coding: utf-8 -*-\nx = 1\n"),  # how the bytes read
    ("def f(:\n", "def f( :\n"),  # not Python: no verdict
    ("x = 1\n", "x = 1\n"),  # no change at all
])
def test_a_change_that_only_looks_like_formatting_is_a_change(before: str, after: str) -> None:
    assert not formatting_only(before, after, "m.py")


@pytest.mark.parametrize(("before", "after", "path"), [
    ("x = 1\n-1\np x\n", "x = 1 -1\np x\n", "m.rb"),  # Ruby: a line break ends a statement
    ("  :only => [ :a,\n    :b ]\n", "  only: [:a, :b]\n", "m.rb"),  # even where it would be layout
    ("let a = 1;\n", "let a = 1 ;\n", "m.js"),
])
def test_other_languages_are_never_formatting(before: str, after: str, path: str) -> None:
    assert not formatting_only(before, after, path)


@pytest.fixture(scope="module")
def ctfd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CTFd's real history of the files of one eval case, with its `Format all the things (#991)` (black)."""
    case = load_case(EVALS / "ctfd-users-create-admin-email")
    return prepare_repository(case, tmp_path_factory.mktemp("ctfd") / "repo")


def _commit(repo: Path, original: str) -> str:
    """The slice's commit that carries the real `original` sha in its trailer."""
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%H %(trailers:key=Original-Commit,valueonly,separator=)"],
                         capture_output=True, text=True, check=True).stdout
    return next(line.split()[0] for line in log.splitlines() if line.endswith(original))


BLACK = "6833378c36a2dd75d7123ef693b74f8029f956ba"  # CTFd's "Format all the things (#991)"


def test_blame_looks_through_the_real_black_commit_to_who_wrote_the_lines(ctfd: Path) -> None:
    black = _commit(ctfd, BLACK)
    lines = list(range(105, 131))  # UserSchema.validate_email, most of whose lines black rewrote
    plain = run_git(ctfd, "blame", "--porcelain", "-w", "-M", "-L", "105,130", "HEAD", "--", "CTFd/schemas/users.py")
    assert plain.count(black) >= 5  # git's own blame, even ignoring whitespace, names the formatter
    blame = LocalRepoHost(ctfd).blame("CTFd/schemas/users.py", lines)
    assert len(blame.lines) == len(lines) and black not in {b.sha for b in blame.lines}
    authors_of_the_logic = {b.summary for b in blame.lines}
    assert "Some 2.1.0a1 bugfixes (#959)" in authors_of_the_logic  # the current-user exemption the real fix removed
    assert any("only reformatted" in n and black[:12] in n for n in blame.notes)


def test_every_file_the_real_black_commit_touched_is_formatting_and_a_real_fix_is_not(ctfd: Path) -> None:
    black = _commit(ctfd, BLACK)
    files = run_git(ctfd, "show", "--format=", "--name-only", black).split()
    assert files and all(reformatted(ctfd, run_git, black, f, 30.0) for f in files)
    fix = _commit(ctfd, "0fa480bc14e52343964178facb52463c392dcd0b")  # "Some 2.1.0a1 bugfixes (#959)"
    assert not reformatted(ctfd, run_git, fix, "CTFd/schemas/users.py", 30.0)
