"""Formatting-only changes: what black, ruff format or autopep8 do to a Python file, or rubocop -a and standardrb
--fix to a Ruby one, without changing what it does. Blame looks through them, as it looks through whitespace-only
edits: "introduced by Format all the things" names whoever ran the formatter, and the team routes the issue to the
wrong person.

A Python change is formatting-only when both versions of the whole file parse to the same syntax tree (the check
black itself runs before it writes a file): layout, comments, quotes, trailing commas and grouping parentheses leave
the tree as it was; a one-element tuple that lost its comma, a statement that left its block or an import that moved
do not. What the tree does not hold but running the file does is compared too: the encoding declaration and the
`#!` line. A Ruby change is formatting-only when both versions read as the same tree, node for node and token for
token (nightwatch.codehosts.ruby_tree: Ruby's line breaks and spaces can change what a file does, so only what the
tree leaves out may differ). Any other language, and a file either version of which does not parse, is never
formatting.
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from pathlib import PurePosixPath
from typing import Protocol, TypeGuard

from nightwatch.codehosts.ruby_tree import RUBY_NAMES, RUBY_SUFFIXES, ruby_encoding, ruby_lines_before, ruby_tokens

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.M)
_REPLACED = "\ufffd"
_QUIET = threading.Lock()  # warnings.catch_warnings changes process-wide state: one parse at a time


def judged(path: str) -> bool:
    """Whether a change of `path` can be judged formatting-only at all: Python and Ruby files."""
    name = PurePosixPath(path)
    return _python(path) or name.suffix in RUBY_SUFFIXES or name.name in RUBY_NAMES


def _python(path: str) -> bool:
    return PurePosixPath(path).suffix in (".py", ".pyi")


def formatting_only(before: str, after: str, path: str) -> bool:
    """Whether a change of `path` from `before` to `after` (the whole file on each side) differs only in layout. A
    change that added or removed only blank lines and comments is formatting too."""
    if before == after or not judged(path) or _REPLACED in before or _REPLACED in after:
        return False  # bytes that were not UTF-8 read as U+FFFD: two different ones would compare equal
    if not _python(path):
        old_tokens = ruby_tokens(before)
        return old_tokens is not None and old_tokens == ruby_tokens(after) and ruby_encoding(before) == ruby_encoding(after)
    old, new = _python_tree(before), _python_tree(after)
    return old is not None and old == new and _run_as(before) == _run_as(after)


def _python_tree(text: str) -> str | None:
    """The file's syntax tree without positions, each string that stands as a statement of its own (a docstring)
    with its lines stripped, as black's own check compares them (black and ruff re-indent docstrings); None where it
    does not parse (a commit that breaks or mends the file changed it)."""
    try:
        tree = _parsed(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                node.value.value = "\n".join(line.strip() for line in node.value.value.splitlines()).strip()
        return ast.dump(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _parsed(text: str) -> ast.AST:
    """The file's tree (a byte-order mark before it aside); raises where it does not parse."""
    with _QUIET, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a parsed file's SyntaxWarnings are not the night's: the tree is what counts
        return ast.parse(text.removeprefix("\ufeff"), type_comments=False)


def _run_as(text: str) -> tuple[str, str]:
    """What a file's comments decide: its `#!` interpreter line and its encoding declaration (PEP 263: in its
    first two lines)."""
    lines = text.split("\n", 2)
    shebang = lines[0] if lines[0].startswith("#!") else ""
    coding = _CODING.search("\n".join(lines[:2]))
    return shebang, coding.group(1).lower() if coding else ""


def lines_before(before: str, after: str, path: str) -> dict[int, int]:
    """For a formatting-only change (`formatting_only(before, after, path)`), the line of `before` that each line of
    `after` came from (a Ruby file: nightwatch.codehosts.ruby_tree.ruby_lines_before). Both trees have the same nodes
    in the same order, so a line where a node starts maps to where that node starts in `before`, the outermost node
    starting there deciding (a call black joined onto one line: its statement's first line); a line where none starts
    (`else:`, `finally:`, a closing `):`, the rest of a string) maps to where its innermost statement starts; a line
    outside every statement (a comment between them) takes the nearest line above. Each node is visited once and each
    line once per statement around it (Python nests blocks at most 100 deep). Empty when either side does not parse,
    or holds a lone carriage return (Python ends a line there; git and GitHub do not, so their line numbers would
    differ)."""
    if not _python(path):
        return ruby_lines_before(before, after) if judged(path) else {}
    trees = None if _LONE_CR.search(before) or _LONE_CR.search(after) else _trees(before, after)
    if trees is None:
        return {}
    starts: dict[int, int] = {}
    inside: dict[int, int] = {}
    for old, new in _paired(*trees):  # breadth first: an outer node before the nodes it holds
        starts.setdefault(new.lineno, old.lineno)
        if isinstance(new, _STATEMENTS):
            inside.update(dict.fromkeys(range(new.lineno, (new.end_lineno or new.lineno) + 1), old.lineno))
    found, nearest = {}, None
    for line in range(1, after.count("\n") + 2):
        nearest = starts.get(line, inside.get(line, nearest))
        if nearest is not None:
            found[line] = nearest
    return found


_LONE_CR = re.compile(r"\r(?!\n)")
_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _trees(before: str, after: str) -> tuple[ast.AST, ast.AST] | None:
    try:
        return _parsed(before), _parsed(after)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _Positioned(Protocol):
    """A node with a position: a statement, an expression, an argument... (not a module, an operator, a `case`)."""

    lineno: int
    end_lineno: int | None


def _positioned(pair: tuple[ast.AST, ast.AST]) -> TypeGuard[tuple[_Positioned, _Positioned]]:
    """Whether the new node of a pair has a position; the old one, the same node of an equal tree, then has one too."""
    return getattr(pair[1], "lineno", None) is not None


def _paired(old_tree: ast.AST, new_tree: ast.AST) -> list[tuple[_Positioned, _Positioned]]:
    """(node of the old tree, the same node of the new one) for every node with a position, breadth first: equal
    trees walk alike, node for node."""
    pairs: list[tuple[_Positioned, _Positioned]] = []
    level = [(old_tree, new_tree)]
    while level:
        pairs += [pair for pair in level if _positioned(pair)]
        level = [child for old, new in level for child in zip(ast.iter_child_nodes(old), ast.iter_child_nodes(new))]
    return pairs
