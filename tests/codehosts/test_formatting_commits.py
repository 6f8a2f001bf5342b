"""Blame looks through commits that only reformatted a Python file (black, autopep8...), as it looks through
whitespace-only edits: checked on what formatters wrote in real history, and on what only looks like formatting."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.blame import parse_porcelain, reformatted
from nightwatch.codehosts.formatting import formatting_only, lines_before
from nightwatch.codehosts.github_blame import _same_lines, blame_via_graphql
from nightwatch.codehosts.local import LocalRepoHost, run_git
from nightwatch.evaluation import load_case, prepare_repository
from tests.codehosts.test_github_blame import github_host
from tests.fakes.github import FakeGitHub

EVALS = Path(__file__).resolve().parents[2] / "evals"

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
    ("f -1\n", "f - 1\n", "m.rb"),  # a space decides between an argument and a subtraction
    ("  :only => [ :a,\n    :b ]\n", "  only: [:a, :b]\n", "m.rb"),  # another way to write the same hash: a change
    ("v = /\\A[^@]+\\z/\n", "v = /\\A[^@ ]+\\z/\n", "m.rb"),
    ("v = /\\A#{U}\\Z/\n", "v = /\\A#{U}\\z/\n", "m.rb"),
    ("s = '#{x}'\n", 's = "#{x}"\n', "m.rb"),  # single quotes do not interpolate
    ("s = '#@x'\n", 's = "#@x"\n', "m.rb"),
    ("s = +''\n", "# frozen_string_literal: true\ns = +''\n", "m.rb"),  # a magic comment is code
    ("# encoding: ascii\ns = 'x'\n", "# encoding: utf-8\ns = 'x'\n", "m.rb"),
    ("ok = a.start_with? /x y/\n", "ok = a.start_with? /xy/\n", "m.rb"),  # a slash Ruby reads as a regexp
    ("x = y /2\n", "x = y / 2\n", "m.rb"),
    ("begin\nrescue NoIpsError\nend\n", "begin\nrescue NoIPsError\nend\n", "m.rb"),
    ("q = <<~SQL\n  a  b\nSQL\n", "q = <<~SQL\n  a b\nSQL\n", "m.rb"),  # a heredoc's lines are text
    ("q = <<-eos\n  a\n  eos\nx\n", "q = <<-eos\n  a\neos\n  eos\nx\n", "m.rb"),  # a lowercase heredoc name too
    ("@x ||= (a and b)\n", "@x ||= a and b\n", "m.rb"),  # `and` binds looser than `||=`
    ("foo(a, b)\n", "foo a, b\n", "m.rb"),  # the same call, another tree: never judged layout
    ("def f(\n", "def f( \n", "m.rb"),  # does not parse: no verdict
    ("x = 1\n__END__\na\n", "x = 1\n__END__\nb\n", "m.rb"),  # DATA is read
    ("f(1,\n  2)\nx = __LINE__\n", "f(1, 2)\nx = __LINE__\n", "m.rb"),  # __LINE__ is its line: joining moved it
    # found by an attacker's review: Ruby reads these by their spaces or line breaks, the grammar's tree does not
    ("p +1\n", "p + 1\n", "m.rb"),  # p(+1), then p() + 1
    ("s = 'caf\ufffd'\nf(1,\n  2)\n", "s = 'caf\ufffd'\nf(1, 2)\n", "m.rb"),  # Latin-1 read as UTF-8: é and è alike
    ("x = @a.size +1\n", "x = @a.size + 1\n", "m.rb"),
    ("x = defined?(String).nil?\n", "x = defined? (String).nil?\n", "m.rb"),
    ("v = (not(nil).to_s)\n", "v = (not (nil).to_s)\n", "m.rb"),
    ("# encoding: ascii-8bit\nx = 1\n", "\n# encoding: ascii-8bit\nx = 1\n", "m.rb"),  # read on line 1 only
    ("# coding=binary\nx = 1\n", "x = 1\n", "m.rb"),
    ("foo(&b)\n", "foo(&b,)\n", "m.rb"),  # Ruby rejects a comma after a block argument
    ("x = [1, 2]\n", "x = [1\n, 2]\n", "m.rb"),  # nor a line that starts with a comma
    ("x = a ? b : c\n", "x = a ? b\n: c\n", "m.rb"),
    ("x = y rescue z\n", "x = y rescue\nz\n", "m.rb"),
    ("=begin\ndoc\n=end\nx = 1\n", " =begin\ndoc\n =end\nx = 1\n", "m.rb"),  # only at column 0
    ("p 1\n__END__\nfoo\n", "p 1\n __END__\nfoo\n", "m.rb"),
    ("foo.bar\n", "foo\n\n.bar\n", "m.rb"),
    # and so the spaces rubocop puts around an operator or inside brackets are not taken for layout: a formatter's
    # commit is then named, never a real change looked through
    ("def f(a,b)\n  a+b\nend\n", "def f(a, b)\n  a + b\nend\n", "m.rb"),
    ("x = [1,\n     2]\n", "x = [\n  1,\n  2\n]\n", "m.rb"),
    ("let a = 1;\n", "let a = 1 ;\n", "m.js"),
])
def test_a_change_ruby_reads_differently_and_other_languages_are_never_formatting(before: str, after: str,
                                                                                path: str) -> None:
    assert not formatting_only(before, after, path)


@pytest.mark.parametrize(("before", "after"), [
    ("before_action :a,\n  only: [:b, :c]\n", "before_action :a, only: [:b, :c]\n"),  # a line rejoined
    ("class A\n  def b\n  end\nend\n", "# Docs for A\nclass A\n  def b\n  end\nend\n"),  # Style/Documentation
    ("def f(a, b)\n    a + b   \nend\n", "def f(a, b)\n  a + b\nend\n"),  # indentation, trailing spaces
    ("x = [1,\n     2]\n", "x = [1,\n  2]\n"),
    ("foo(a,\n    b)\n", "foo(a, b)\n"),
])
def test_what_rubocop_does_to_layout_is_formatting(before: str, after: str) -> None:
    assert formatting_only(before, after, "app/models/story.rb")
    back = lines_before(before, after, "app/models/story.rb")
    assert back[1] == 1  # the first line of a statement maps to its first line


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


def test_each_line_a_formatter_wrote_maps_to_the_line_it_came_from() -> None:
    before = "import os\n\ndef f(a,\n      b):\n    x = call(a,\n             b)  # why\n    return x\n"
    after = "import os\n\n\ndef f(a, b):\n    # why\n    x = call(a, b)\n    return x\n"
    assert formatting_only(before, after, "m.py")
    back = lines_before(before, after, "m.py")
    assert back[1] == 1 and back[4] == 3 and back[6] == 5 and back[7] == 7  # a joined call: its first line
    assert back[2] == back[3] == 1  # blank lines, as comments, take the nearest code line above
    assert lines_before("def f(:\n", after, "m.py") == {}


@pytest.mark.parametrize(("before", "after", "expected"), [
    # a block's own lines (`else:`, `finally:`, a split signature's `):`) map to where the statement starts, never
    # to a statement that happens to sit as far below it
    ("if a:\n    f(1, 2)\nelse:\n    g()\n    h()\n", "if a:\n    f(\n        1,\n        2,\n    )\nelse:\n    g()\n    h()\n",
     {1: 1, 2: 2, 5: 2, 6: 1, 7: 4, 8: 5}),
    ("try:\n    f(1,\n 2)\nfinally:\n    g()\n", "try:\n    f(1, 2)\nfinally:\n    g()\n", {2: 2, 3: 1, 4: 5}),
    ("def f(a, b):\n    return x\n", "def f(\n    a,\n    b,\n):\n    return x\n", {1: 1, 4: 1, 5: 2}),
    ("x = f(a,\n      g(b))\n", "x = f(a, g(b))\n", {1: 1}),  # a joined statement: its first line, not g(b)'s
    ("@app.route('/')\ndef index(): return 1\n", '@app.route("/")\ndef index():\n    return 1\n', {1: 1, 2: 2, 3: 2}),
])
def test_a_line_maps_to_where_its_own_statement_started(before: str, after: str, expected: dict[int, int]) -> None:
    assert formatting_only(before, after, "m.py")
    back = lines_before(before, after, "m.py")
    assert {line: back[line] for line in expected} == expected


def test_what_python_and_git_count_as_lines_differently_maps_nothing() -> None:
    """Python ends a line at a lone carriage return; git and GitHub number lines by newlines only."""
    before, after = "# note\rx = 0\nb = f(1,\n      2)\nc = 3\n", "# note\rx = 0\nb = f(1, 2)\nc = 3\n"
    assert formatting_only(before, after, "m.py") and lines_before(before, after, "m.py") == {}


def test_a_reindented_docstring_is_formatting_as_black_judges_it_and_a_changed_string_is_not() -> None:
    doc = 'def f():\n    """ Isolate change.\n\n       More.\n    """\n    return 1\n'
    assert formatting_only(doc, doc.replace('""" Isolate', '"""Isolate').replace("       More", "    More"), "m.py")
    assert not formatting_only('x = " a"\n', 'x = "a"\n', "m.py")
    assert not formatting_only('def f():\n    """Isolate."""\n', 'def f():\n    """Isolated."""\n', "m.py")
    assert formatting_only("\ufeffx = f(1,\n 2)\n", "\ufeffx = f(1, 2)\n", "m.py")  # a byte-order mark parses


def test_a_string_of_many_lines_in_deep_brackets_maps_in_one_pass() -> None:
    """Each line is mapped once per statement around it, not once per node: 190 brackets around a string of 300,000
    lines took 50 s when every node's lines were."""
    body = "x = " + "[" * 190 + '"""' + "\n" * 300_000 + '"""' + "]" * 190 + "\n"
    back = lines_before(body, "# why\n" + body, "m.py")
    assert back[2] == 1 and back[300_001] == 1 and 1 not in back and len(back) == 300_002  # the comment: nothing above


def _github_named(fake: FakeGitHub, path: str, rev: str | None = None) -> dict[int, str]:
    """GitHub's own blame (the fake answers it from git, without -w): the commit of each line at `rev`."""
    return {n: r["commit"]["oid"] for r in fake.history.ranges(path, rev)
            for n in range(r["startingLine"], r["endingLine"] + 1)}


def _norm(line: str) -> str:
    return re.sub(r"\s+", "", line).replace("'", '"')


@pytest.mark.slow  # a real black commit of CTFd, blamed both ways
def test_github_looks_through_the_real_black_commit_by_the_syntax_tree(ctfd: Path) -> None:
    """GitHub's blame has no --ignore-rev: each line black last changed is followed into black's parent by the syntax
    tree and blamed there. The oracle knows nothing of trees: a line whose text (whitespace and quotes aside, long
    enough to name a statement) is in the file once before black came from that line, and GitHub's own blame at
    black's parent names its commit."""
    black = _commit(ctfd, BLACK)
    files = [f for f in run_git(ctfd, "show", "--format=", "--name-only", black).split() if f.endswith(".py")]
    checked = 0
    with FakeGitHub(history=ctfd) as fake:
        host = github_host(fake)
        for path in files:
            before = run_git(ctfd, "show", f"{black}^:{path}").split("\n")
            head = run_git(ctfd, "show", f"HEAD:{path}").split("\n")
            once = {key: n for key, n in ((_norm(line), n) for n, line in enumerate(before, 1)) if sum(
                _norm(other) == key for other in before) == 1 and len(key) >= 25}
            lines = {n: once[_norm(head[n - 1])] for n, sha in _github_named(fake, path).items()
                     if sha == black and _norm(head[n - 1]) in once}
            if not lines:
                continue
            named = {b.line: b.sha for b in host.blame(path, sorted(lines)).lines}
            earlier = _github_named(fake, path, f"{black}^")
            assert {n: named.get(n) for n in lines} == {n: earlier[at] for n, at in lines.items()}, path
            checked += len(lines)
    assert checked >= 50  # 57 lines of 3 files


def test_through_github_the_validation_black_rewrote_names_who_wrote_its_logic(ctfd: Path) -> None:
    black = _commit(ctfd, BLACK)
    path, lines = "CTFd/schemas/users.py", list(range(105, 131))
    with FakeGitHub(history=ctfd) as fake:
        plain = [n for n, sha in _github_named(fake, path).items() if sha == black and n in lines]
        blame = github_host(fake).blame(path, lines)
    assert len(plain) >= 5 and len(blame.lines) == len(lines) and black not in {b.sha for b in blame.lines}
    assert "Some 2.1.0a1 bugfixes (#959)" in {b.summary for b in blame.lines}
    assert any("only reformatted" in n and black[:12] in n for n in blame.notes)


def test_a_github_that_stops_answering_while_looking_through_keeps_the_blame_it_had(ctfd: Path) -> None:
    black = _commit(ctfd, BLACK)
    path, lines = "CTFd/schemas/users.py", list(range(105, 131))
    asked: list[str] = []
    with FakeGitHub(history=ctfd) as fake:
        host = github_host(fake)

        def query(text: str, variables: dict) -> dict:
            asked.append(text)
            if "... on Blob" in text and len([q for q in asked if "... on Blob" in q]) > 1:
                raise CodeHostError("GitHub's GraphQL API answered 502")
            return host._graphql(text, variables)

        blame = blame_via_graphql(query, host.repo_name, "main", path, lines)
        assert sum("... on Blob" in q for q in asked) == 2  # the black commit's file, then its parent's: refused
        asked.clear()
        other = blame_via_graphql(query, host.repo_name, "main", "LICENSE", [1, 2, 3])
    assert black in {b.sha for b in blame.lines} and len(blame.lines) == len(lines)  # the blame it had stands
    assert not any("only reformatted" in n for n in blame.notes)
    assert any("stopped looking through formatting commits: GitHub's GraphQL API answered 502" in n for n in blame.notes)
    assert len(other.lines) == 3 and len(asked) == 1  # a file in another language: its blame, and no file asked for


def test_a_line_is_found_again_in_a_large_file_of_repeated_lines() -> None:
    """Each line is looked up, not the two files aligned: 40,000 lines of which 30,000 are alike cost a pass over each
    (an alignment of them is quadratic: difflib took 98 s on these two)."""
    other = "\n".join(f"x{i} = {i}" if i % 4 == 0 else "" for i in range(40_000))
    text = "import os\n" + other  # one line added on top: everything moved down by one
    found = _same_lines(text, other, [1, 2, 5, 6, 39_997, 40_001])
    assert found == {2: 1, 5: 4, 6: 5, 39_997: 39_996, 40_001: 40_000}


@pytest.mark.slow  # a real black commit of CTFd, blamed both ways
def test_local_blame_places_every_line_black_wrote_where_git_s_ignore_rev_leaves_some_on_black(ctfd: Path) -> None:
    """Each line followed by the syntax tree, against git's own `--ignore-rev` (which matches lines by their text), on
    every Python file the real black commit touched: where git places a line, the tree places it alike; the closing
    brackets and split elements git cannot place, it leaves on the formatter."""
    black = _commit(ctfd, BLACK)
    left_by_git = placed_by_git = agree = 0
    for path in [f for f in run_git(ctfd, "show", "--format=", "--name-only", black).split() if f.endswith(".py")]:
        count = run_git(ctfd, "show", f"HEAD:{path}").count("\n")
        ignored = {b.line: b.sha for b in parse_porcelain(run_git(ctfd, "blame", "--porcelain", "-w", "--ignore-rev", black,
                                                                  "HEAD", "--", path))}
        ours = {b.line: b.sha for b in LocalRepoHost(ctfd).blame(path, list(range(1, count + 1))).lines}
        assert black not in ours.values() and len(ours) == count, path
        left_by_git += sum(sha == black for sha in ignored.values())
        placed = [n for n, sha in ignored.items() if sha != black]
        placed_by_git += len(placed)
        agree += sum(ours[n] == ignored[n] for n in placed)
    assert left_by_git >= 20 and agree >= 0.99 * placed_by_git  # 31 left; 2,666 of 2,669 alike


def test_a_real_rubocop_run_is_layout_and_a_real_standardrb_run_that_changed_code_is_not(tmp_path: Path) -> None:
    """Lobsters' real history: rubocop's Style/Documentation run (7a4a4a7) only rejoined `before_action` lines and
    added a trailing comma in StoriesController; standardrb (c3f8625) also rewrote hash rockets, quotes and
    `@user && @user.is_moderator?` as `@user&.is_moderator?`, which the tree does not take for layout."""
    dupe = prepare_repository(load_case(EVALS / "lobsters-check-url-dupe-anonymous"), tmp_path / "dupe")
    rubocop = _commit(dupe, "7a4a4a738fc4448f3c035fee3b663da509ee248c")
    assert reformatted(dupe, run_git, rubocop, "app/controllers/stories_controller.rb", 30.0)
    rss = prepare_repository(load_case(EVALS / "lobsters-rss-invalid-token"), tmp_path / "rss")
    standardrb = _commit(rss, "c3f8625788245129903f31622bb452957223fc44")
    assert not reformatted(rss, run_git, standardrb, "app/controllers/application_controller.rb", 30.0)


def test_blame_looks_through_a_rubocop_run_to_who_wrote_the_ruby(tmp_path: Path) -> None:
    repo, path = tmp_path / "app", "app/controllers/stories_controller.rb"
    (repo / "app" / "controllers").mkdir(parents=True)

    def commit(text: str, message: str, author: str) -> str:
        (repo / path).write_text(text)
        run_git(repo, "add", path)
        run_git(repo, "-c", f"user.name={author}", "-c", "user.email=a@example.com", "commit", "-q", "-m", message)
        return run_git(repo, "rev-parse", "HEAD").strip()

    run_git(repo, "init", "-q")
    commit("class StoriesController\nend\n", "start", "Ann")
    wrote = commit("class StoriesController\n  before_action :require_user,\n    :only => [ :upvote,\n    :save ]\nend\n",
                   "require a user to vote", "Bob")
    rubocop = commit("class StoriesController\n  before_action :require_user,\n    :only => [ :upvote, :save, ]\nend\n",
                     "rubocop -a", "Cy")
    plain = {b.line: b.sha for b in parse_porcelain(run_git(repo, "blame", "--porcelain", "-w", "HEAD", "--", path))}
    assert plain[3] == rubocop  # the rejoined line: git's own blame names the formatter
    blame = LocalRepoHost(repo).blame(path, [2, 3])
    assert [b.sha for b in blame.lines] == [wrote, wrote]
    assert any("only reformatted" in n and rubocop[:12] in n for n in blame.notes)
