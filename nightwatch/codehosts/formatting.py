"""Formatting-only changes: what black, ruff format or autopep8 do to a Python file without changing what it does.
Blame looks through them, as it looks through whitespace-only edits: "introduced by Format all the things" names
whoever ran the formatter, and the team routes the issue to the wrong person.

A change is formatting-only when both versions of the whole file parse to the same syntax tree (the check black
itself runs before it writes a file): layout, comments, quotes, trailing commas and grouping parentheses leave the
tree as it was; a one-element tuple that lost its comma, a statement that left its block or an import that moved do
not. What the tree does not hold but running the file does is compared too: the encoding declaration and the
`#!` line. Any other language, and a file either version of which does not parse, is never formatting: a lexer of
our own for Ruby (whose line breaks end statements, whose slashes may start a regexp and whose heredocs hold text)
would judge some changes that matter as layout.
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from pathlib import PurePosixPath

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.M)
_QUIET = threading.Lock()  # warnings.catch_warnings changes process-wide state: one parse at a time


def formatting_only(before: str, after: str, path: str) -> bool:
    """Whether a change of `path` from `before` to `after` (the whole file on each side) differs only in layout. A
    change that added or removed only blank lines and comments is formatting too."""
    if before == after or PurePosixPath(path).suffix not in (".py", ".pyi"):
        return False
    old, new = _python_tree(before), _python_tree(after)
    return old is not None and old == new and _run_as(before) == _run_as(after)


def _python_tree(text: str) -> str | None:
    """The file's syntax tree without positions; None where it does not parse (a commit that breaks or mends the
    file changed it)."""
    try:
        with _QUIET, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a parsed file's SyntaxWarnings are not the night's: the tree is what counts
            return ast.dump(ast.parse(text, type_comments=False))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _run_as(text: str) -> tuple[str, str]:
    """What a file's comments decide: its `#!` interpreter line and its encoding declaration (PEP 263: in its
    first two lines)."""
    lines = text.split("\n", 2)
    shebang = lines[0] if lines[0].startswith("#!") else ""
    coding = _CODING.search("\n".join(lines[:2]))
    return shebang, coding.group(1).lower() if coding else ""


def lines_before(before: str, after: str) -> dict[int, int]:
    """For a formatting-only change (`formatting_only(before, after, path)`), the line of `before` that each line of
    `after` holding code came from: both trees have the same nodes in the same order, so each node's lines in `after`
    map onto the same node's lines in `before`, the innermost node deciding (black joining a call onto one line maps
    it to the call's first line). Lines outside every node (blank lines, comments) take the nearest code line above.
    Empty when either side does not parse."""
    trees = _trees(before, after)
    if trees is None:
        return {}
    found: dict[int, tuple[int, int]] = {}  # line of `after` -> (depth of the node that decided it, line of `before`)
    for depth, (old, new) in _paired(*trees):
        for offset, line in enumerate(range(new.lineno, (new.end_lineno or new.lineno) + 1)):
            at = min(old.lineno + offset, old.end_lineno or old.lineno)
            if line not in found or (depth, -at) > (found[line][0], -found[line][1]):
                found[line] = (depth, at)  # the innermost node; of two on one line, the earlier line it came from
    last = after.count("\n") + 1
    carried, nearest = {}, None
    for line in range(1, last + 1):
        nearest = found[line][1] if line in found else nearest
        if nearest is not None:
            carried[line] = nearest
    return carried


def _trees(before: str, after: str) -> tuple[ast.AST, ast.AST] | None:
    try:
        with _QUIET, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(before, type_comments=False), ast.parse(after, type_comments=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _paired(old_tree: ast.AST, new_tree: ast.AST) -> list[tuple[int, tuple[ast.AST, ast.AST]]]:
    """(depth, (node of the old tree, the same node of the new one)) for every node with a position: equal trees walk
    alike, node for node."""
    pairs: list[tuple[int, tuple[ast.AST, ast.AST]]] = []
    level = [(old_tree, new_tree)]
    depth = 0
    while level:
        pairs += [(depth, pair) for pair in level if getattr(pair[1], "lineno", None) is not None]
        level = [child for old, new in level for child in zip(ast.iter_child_nodes(old), ast.iter_child_nodes(new))]
        depth += 1
    return pairs
