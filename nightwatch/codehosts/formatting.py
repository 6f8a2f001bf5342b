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
