"""The statements that built the values a line uses: its backward data slice within its own function.

An error raised on a value (`'dict' object has no attribute 'html'`, `undefined method for nil`) is often
written where that value was built, a few lines above the line that fails: the crash line only uses it.
So the commit that introduced the error may have changed one of those statements and not the crash line.
Given a file and a line, this returns the earlier statements of the same function that assign a name the
line reads, and, transitively, the statements those read (a bounded backward slice), each as its line range.

Python is read with `ast` (multi-line statements are whole; names, targets of `for`, `with ... as` and
walrus included). Ruby is read line by line: the enclosing `def` by indentation, local assignments
`name = ...`, `name ||= ...`. A file that does not parse, or a line outside any function, gives nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

MAX_STATEMENTS = 8  # the slice stops growing after this many statements: far ones are rarely the cause

_RUBY_DEF = re.compile(r"^(\s*)(?:(?:private|protected|public|module_function)\s+)?def\s")
_RUBY_ENDLESS_DEF = re.compile(r"^\s*(?:\w+\s+)?def\s+[\w.?!]+(?:\([^)]*\))?\s*=[^=~>]")  # `def name = expr`: no `end`
_RUBY_END = re.compile(r"^(\s*)end\b")
_RUBY_ASSIGN = re.compile(r"^\s*([a-z_]\w*)\s*(\|\||&&|\+|-)?=(?![=~>])")
_RUBY_NAME = re.compile(r"(?<![\w@:.$])[a-z_]\w*")
_RUBY_WORDS = frozenset("if unless else elsif end do while until return and or not then nil true false self def case when "
                        "begin rescue ensure yield next break super in puts raise".split())


def value_lines(path: str, text: str, line: int) -> list[tuple[int, int]]:
    """(first, last) line of each statement of the slice of `line` in `text`, nearest first; [] when unknown."""
    if path.endswith(".py"):
        return _python(text, line)
    if path.endswith(".rb"):
        return _ruby(text.split("\n"), line)  # as git numbers lines: a form feed or U+2028 does not end one
    return []


def deciding_lines(path: str, text: str, line: int) -> list[tuple[int, int]]:
    """(first, last) line of each condition after `line`, in its function, that reads a name the statement at `line`
    assigns (`existing = User.query...first()`, then `if existing and existing.id != user_id:`), nearest first: where
    the analysis says a check let a value through, those conditions decide what got through. Python only; [] when
    unknown."""
    found = _statement_at(text, line) if path.endswith(".py") else None
    if found is None:
        return []
    at, statements = found
    names = _assigns(at)
    conditions = sorted((s for s in statements if s.lineno > line and isinstance(s, (ast.If, ast.While, ast.Assert))),
                        key=lambda s: s.lineno)
    return [_span(s) for s in conditions if names & _reads([s.test])][:MAX_STATEMENTS]


# Python ---------------------------------------------------------------------------------------------------------
def _python(text: str, line: int) -> list[tuple[int, int]]:
    found = _statement_at(text, line)
    if found is None:
        return []
    at, statements = found
    statements = [s for s in statements if s.lineno <= line]
    wanted = _reads(_own_part(at))
    earlier = []
    for s in sorted(statements, key=lambda s: -s.lineno):
        span, assigns = _span(s), _assigns(s)
        if s is not at and span[1] < line and assigns:
            earlier.append((*span, assigns, _reads(_own_part(s)) | _updated(s)))
    return _slice(wanted, earlier)


def _statement_at(text: str, line: int) -> tuple[ast.stmt, list[ast.stmt]] | None:
    """The innermost statement holding `line` (the shortest, and of a one-line `if x: return y` the body, not the if)
    and every statement of its function's own scope; None outside a function or where the text does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, or nested past what the parser takes
        return None
    function = _innermost_function(tree, line)
    statements = _own_statements(function) if function is not None else []
    holding = [s for s in statements if s.lineno <= line <= (s.end_lineno or s.lineno)]
    if not holding:
        return None
    return min(holding, key=lambda s: ((s.end_lineno or s.lineno) - s.lineno, -s.col_offset)), statements


def _span(statement: ast.stmt) -> tuple[int, int]:
    """The lines a statement itself takes: a compound one (if, for, with) up to its header's end, not its body."""
    parts = _own_part(statement)
    if parts == [statement]:
        return statement.lineno, statement.end_lineno or statement.lineno
    return statement.lineno, max((getattr(p, "end_lineno", None) or statement.lineno for p in parts), default=statement.lineno)


def _own_statements(function: ast.AST) -> list[ast.stmt]:
    """The statements of a function's own scope: nested functions, classes and lambdas are scopes of their own."""
    out: list[ast.stmt] = []
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.stmt):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _innermost_function(tree: ast.AST, line: int) -> ast.AST | None:
    found = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if found is None or node.lineno >= found.lineno:
                found = node
    return found


def _own_part(statement: ast.stmt) -> list[ast.AST]:
    """What a statement itself evaluates: for a compound one (if, for, with, try) its header, not its body."""
    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [statement.iter]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in statement.items]
    if isinstance(statement, ast.Match):
        return [statement.subject]
    if isinstance(statement, (ast.Try, ast.TryStar, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []
    return [statement]


def _reads(nodes: Iterable[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _updated(statement: ast.stmt) -> set[str]:
    """The names an augmented assignment reads as it writes them (`total += x` reads `total`)."""
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        return {statement.target.id}
    return set()


def _assigns(statement: ast.stmt) -> set[str]:
    targets: list[ast.AST] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars is not None]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    names |= {n.target.id for part in _own_part(statement) for n in ast.walk(part)
              if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)}
    return names


# Ruby -----------------------------------------------------------------------------------------------------------
def _ruby(lines: list[str], line: int) -> list[tuple[int, int]]:
    if not 1 <= line <= len(lines):
        return []
    start = _ruby_method_start(lines, line)
    if start is None:
        return []
    wanted = _ruby_reads(lines[line - 1])
    earlier = []
    for n in range(line - 1, start, -1):
        match = _RUBY_ASSIGN.match(lines[n - 1])
        if match:
            updated = {match.group(1)} if match.group(2) else set()  # `x ||= y`, `x += y` read x as well
            earlier.append((n, n, {match.group(1)}, _ruby_reads(lines[n - 1][match.end():]) | updated))
    return _slice(wanted, earlier)


def _ruby_method_start(lines: list[str], line: int) -> int | None:
    """The line of the `def` the given line is in (an `end` at the def's indentation in between: it is not)."""
    closed: set[int] = set()
    for n in range(line - 1, 0, -1):
        text = lines[n - 1]
        end = _RUBY_END.match(text)
        if end:
            closed.add(len(end.group(1)))
            continue
        match = _RUBY_DEF.match(text)
        if match and _RUBY_ENDLESS_DEF.match(text):
            continue  # a one-line method, over before the line
        if match:
            if len(match.group(1)) in closed:
                closed.discard(len(match.group(1)))
                continue
            return n
    return None


def _ruby_reads(code: str) -> set[str]:
    code = re.sub(r"#.*$", "", re.sub(r"(['\"]).*?\1", "", code))
    return {w for w in _RUBY_NAME.findall(code) if w not in _RUBY_WORDS}


# both ------------------------------------------------------------------------------------------------------------
def _slice(wanted: set[str], earlier: list[tuple[int, int, set[str], set[str]]]) -> list[tuple[int, int]]:
    """Walking back from the line: each statement that assigns a wanted name joins the slice (the nearest assignment
    of a name ends its search), and what it reads becomes wanted."""
    wanted = set(wanted)
    found: list[tuple[int, int]] = []
    for first, last, assigns, reads in earlier:
        hit = assigns & wanted
        if not hit:
            continue
        found.append((first, last))
        wanted = (wanted - hit) | reads
        if len(found) >= MAX_STATEMENTS:
            break
    return found
