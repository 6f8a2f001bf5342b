"""The shape the code keeps: no import cycle, functions of at most 40 lines and 8 parameters.

The two public parameter lists (the flow's, which the deployment form shows, and `nightwatch run`'s options) are
the exceptions: each parameter there is one a user sets.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from nightwatch import EDGE_PACKAGES

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nightwatch", "knowledge_store", "tasks", "flows", "blocks", "deployments")
CYCLE_FREE = (*PACKAGES, "benchmarks")  # the benchmarks import the product and each other: no cycle there either
PUBLIC_PARAMETER_LISTS = {("flows/nightwatch.py", "nightwatch_flow"), ("nightwatch/cli.py", "run")}  # a command's options
MAX_LINES, MAX_PARAMS = 40, 8


def modules(packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if package in EDGE_PACKAGES:  # imported as nightwatch.<folder> (nightwatch/__init__.py)
                name = f"nightwatch.{name}"
            out[name.removesuffix(".__init__")] = path
    return out


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A file's syntax tree, read once for every test here."""
    return ast.parse(path.read_text(encoding="utf-8"))


def functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for path in modules().values():
        rel = str(path.relative_to(ROOT))
        if rel.startswith("nightwatch/demo/"):  # demo data
            continue
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((rel, node))
    return out


def test_no_function_is_longer_than_40_lines():
    long = [f"{rel}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)" for rel, f in functions()
            if f.end_lineno - f.lineno + 1 > MAX_LINES]
    assert long == []


def test_no_function_takes_more_than_8_parameters():
    def count(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
        a = f.args
        names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        return len([n for n in names if n not in ("self", "cls")])

    wide = [f"{rel}:{f.lineno} {f.name} ({count(f)} parameters)" for rel, f in functions()
            if count(f) > MAX_PARAMS and (rel, f.name) not in PUBLIC_PARAMETER_LISTS]
    assert wide == []


def test_no_import_cycle_not_even_through_an_import_inside_a_function():
    """An import moved into a function still ties the two modules together: it only hides the cycle from Python."""
    found = modules(CYCLE_FREE)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        deps = set()
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                deps |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in found else node.module for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in found and d != name}
    cycles = [cycle for cycle in _strongly_connected(graph) if len(cycle) > 1]
    assert cycles == []


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
    return out


def test_the_cycle_finder_finds_a_cycle():
    found = _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert sorted(sorted(c) for c in found if len(c) > 1) == [["a", "b", "c"]]


def test_the_top_level_folders_are_imported_through_the_nightwatch_namespace():
    """`tasks.x` and `nightwatch.tasks.x` would be two copies of one module; only the second is NightWatch's name."""
    top = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in [*modules(CYCLE_FREE).values(), *(ROOT / "tests").rglob("*.py"),
                                                                *(ROOT / "scripts").rglob("*.py")]
           for node in ast.walk(parsed(path))
           if (isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in EDGE_PACKAGES)
           or (isinstance(node, ast.Import) and any(a.name.split(".")[0] in EDGE_PACKAGES for a in node.names))]
    assert top == []
