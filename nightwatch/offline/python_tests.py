"""How the offline model writes a regression test for a Python web error, and the fixes it can make by rule.

The test replays the production request through the application's own test client (the `client` fixture its
conftest defines) and asserts that the server no longer fails on it (status < 500). What the agent recorded of the
request is its method and path; the rest is inferred the way a reader of the trace would:
  - a value the error message quotes ('GBP'), used at the crash line through a parameter the handler takes from the
    query string under the same name, goes into the query string;
  - a JSON body the handler reads with `.get("key")`, where the error is an attribute of None, is sent without it ({}).
Fixes, each where the handler's module already has the framework's way to answer a client error:
  - a str method called on a value from `.get("key")`: the value defaults to "" at the `.get`;
  - a query parameter looked up in a module-level table: unknown keys answer 422 in the handler;
  - an empty sequence indexed at [0] in the handler: 404.
Production text never becomes code: values enter the test as Python literals (repr), and only when they are short
and printable. None of these rules knows any application.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from nightwatch.models import FileChange, RegressionTest

_METHOD = re.compile(r"\brequest\.method=([A-Z]{3,7})\b")
_URI = re.compile(r"\brequest\.uri=(/[\w\-./~%]*)")
_QUOTED = re.compile(r"'([\w\-.:@ ]{1,60})'")
_NONE_ATTRIBUTE = re.compile(r"'NoneType' object has no attribute '(\w+)'")
_STR_METHODS = {"strip", "lower", "upper", "split", "replace", "startswith", "endswith", "encode", "lstrip", "rstrip",
                "title", "casefold", "format"}
_CLIENT_FIXTURE = re.compile(r"^def client\(", re.M)
_ROUTE = re.compile(r"""^\s*@\w+\.(?:get|post|put|patch|delete|route)\(\s*["']([^"']+)["']""")
_DEF = re.compile(r"^(?P<indent>\s*)(?:async\s+)?def\s+(?P<name>\w+)\s*\((?P<params>[^)]*)\)")
_GET_KEY = re.compile(r"""(?P<expr>\b\w+\.get\(\s*["'](?P<key>\w+)["']\s*\))""")
_INDEX0 = re.compile(r"^(?P<indent>\s*)(?P<head>.*?)(?P<seq>\b[\w.]+\([^()]*\))\[0\](?P<tail>.*)$")
_TABLE = re.compile(r"\b(?P<table>[A-Z][A-Z0-9_]+)\[(?P<key>\w+)\]")


@dataclass(frozen=True)
class Handler:
    """The web handler of the transaction: its file, its def line and its lines in view."""

    path: str
    name: str
    source: dict[int, str]

    def def_line(self) -> int | None:
        return next((n for n, text in sorted(self.source.items()) if (m := _DEF.match(text)) and m["name"] == self.name), None)

    def params(self) -> list[str]:
        line = self.def_line()
        if line is None:
            return []
        return [p.split(":")[0].split("=")[0].strip() for p in _DEF.match(self.source[line])["params"].split(",") if p.strip()]  # type: ignore[index]

    def route(self) -> str:
        line = self.def_line()
        for n in range(line - 1, max(line - 4, 0), -1) if line else []:
            if m := _ROUTE.match(self.source.get(n, "")):
                return m[1]
        return ""

    def body(self) -> list[tuple[int, str]]:
        """The handler's body lines, up to the next top-level statement."""
        start = self.def_line()
        if start is None:
            return []
        out = []
        for n in range(start + 1, max(self.source) + 1):
            text = self.source.get(n)
            if text is None or (text.strip() and not text.startswith((" ", "\t"))):
                break
            out.append((n, text))
        return out

    def module_text(self) -> str:
        return "\n".join(self.source[n] for n in sorted(self.source))


def handler_of(transaction: str, frames: list[tuple[str, int, str]], sources: dict[str, dict[int, str]]) -> Handler | None:
    """The request's handler, when a frame shows it: the function the transaction names (New Relic's
    `WebTransaction/Function/bookshop.app:book_price`, an SDK's `bookshop.app.book_price`), else, for a transaction
    that names a route (`/books/{isbn}/price`), the outermost application frame: the function the framework called."""
    named = transaction.removeprefix("WebTransaction/Function/") if transaction.startswith("WebTransaction/") else (
        transaction if _DOTTED_FUNCTION.match(transaction) else "")
    name = named.rsplit(":", 1)[-1].rsplit(".", 1)[-1] if named else ""
    python = [f for f in frames if f[0].endswith(".py")]
    if not named and python:
        name = python[-1][2]
    frame = next((f for f in python if f[2] == name), None)
    return Handler(frame[0], name, sources.get(frame[0], {})) if frame and name else None


_DOTTED_FUNCTION = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+$")


def regression_test(error_class: str, message: str, traces_text: str, handler: Handler | None, conftest: str,
                    crash: tuple[str, int, str] | None, crash_source: dict[int, str]) -> RegressionTest | None:
    """The production request replayed through the project's `client` fixture, or None when it cannot be built."""
    method, uri = _METHOD.search(traces_text), _URI.search(traces_text)
    if handler is None or not method or not uri or not _CLIENT_FIXTURE.search(conftest):
        return None
    query = _query_value(message, handler, crash, crash_source)
    target = uri[1] + ("?" + urlencode(query) if query else "")
    body = ", json={}" if method[1] in {"POST", "PUT", "PATCH"} and _none_from_get(message, handler) else ""
    cls = error_class.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    content = (
        f'"""Regression test for {cls} in {handler.name}: the request production failed on, replayed (NightWatch)."""\n\n\n'
        f"def test_{handler.name}_request_does_not_fail_on_the_server(client):\n"
        f"    response = client.{method[1].lower()}({target!r}{body})\n"
        f"    assert response.status_code < 500\n"
    )
    path = f"tests/test_regression_{handler.name}.py"
    return RegressionTest(path=path, content=content, test=f"{path}::test_{handler.name}_request_does_not_fail_on_the_server")


def fix_by_rule(error_class: str, message: str, handler: Handler | None, crash: tuple[str, int, str] | None,
                crash_source: dict[int, str]) -> tuple[list[FileChange], str] | None:
    """A fix these rules can make, and what it does; None when none applies."""
    if handler is None or crash is None:
        return None
    return (_default_for_str(message, handler) or _unknown_key(error_class, message, handler, crash, crash_source)
            or _empty_first(message, handler, crash))


def _query_value(message: str, handler: Handler, crash: tuple[str, int, str] | None,
                 crash_source: dict[int, str]) -> dict[str, str]:
    quoted = _QUOTED.search(message)
    if not quoted or crash is None:
        return {}
    crash_line = crash_source.get(crash[1], "")
    route = handler.route()
    for param in handler.params():
        if param in {"request", "self"} or f"{{{param}}}" in route:
            continue
        if re.search(rf"\[{re.escape(param)}\]|\({re.escape(param)}\)", crash_line):
            return {param: quoted[1]}
    return {}


def _none_from_get(message: str, handler: Handler) -> re.Match[str] | None:
    if not _NONE_ATTRIBUTE.search(message):
        return None
    return next((m for _, text in handler.body() if (m := _GET_KEY.search(text))), None)


def _default_for_str(message: str, handler: Handler) -> tuple[list[FileChange], str] | None:
    attribute = _NONE_ATTRIBUTE.search(message)
    found = _none_from_get(message, handler)
    if not attribute or attribute[1] not in _STR_METHODS or not found:
        return None
    line = next(text for _, text in handler.body() if found["expr"] in text)
    key = found["key"]
    fixed = line.replace(found["expr"], f'({found["expr"]} or "")', 1)
    return ([FileChange(path=handler.path, description=f'`{key}` missing from the body is an empty string, not None',
                        before=line, after=fixed)],
            f'`{found["expr"]}` gives None when the body has no `{key}`, and `.{attribute[1]}` is a str method: the value '
            f'defaults to "" where it is read')


def _unknown_key(error_class: str, message: str, handler: Handler, crash: tuple[str, int, str],
                 crash_source: dict[int, str]) -> tuple[list[FileChange], str] | None:
    if not error_class.endswith("KeyError") or not _QUOTED.search(message) or "HTTPException" not in handler.module_text():
        return None
    table = _TABLE.search(crash_source.get(crash[1], ""))
    module = crash[0].rsplit("/", 1)[-1].removesuffix(".py")
    if not table or table["key"] not in handler.params():
        return None
    body = handler.body()
    call = next(((n, t) for n, t in body if f"{module}." in t), None)
    first = next(((n, t) for n, t in body if t.strip()), None)
    if call is None or first is None or not re.search(rf"\b{re.escape(table['table'])}\s*=", "\n".join(crash_source.values())):
        return None
    indent = re.match(r"\s*", first[1])[0]  # type: ignore[index]
    key = table["key"]
    guard = (f"{indent}if {key} not in {module}.{table['table']}:\n"
             f'{indent}    raise HTTPException(status_code=422, detail=f"unknown {key}: {{{key}}}")\n')
    return ([FileChange(path=handler.path, description=f"answer 422 for a {key} {module}.{table['table']} does not know",
                        before=first[1], after=guard + first[1])],
            f"`{key}` comes from the request and is looked up in `{module}.{table['table']}`, which has no entry for it: "
            f"the handler answers 422 for an unknown {key} instead of failing")


def _empty_first(message: str, handler: Handler, crash: tuple[str, int, str]) -> tuple[list[FileChange], str] | None:
    if "index out of range" not in message or crash[0] != handler.path or "HTTPException" not in handler.module_text():
        return None
    line = handler.source.get(crash[1], "")
    m = _INDEX0.match(line)
    if not m:
        return None
    indent = m["indent"]
    after = (f"{indent}found = {m['seq']}\n{indent}if not found:\n"
             f'{indent}    raise HTTPException(status_code=404, detail="not found")\n'
             f"{indent}{m['head']}found[0]{m['tail']}")
    return ([FileChange(path=handler.path, description="answer 404 when the lookup finds nothing", before=line, after=after)],
            f"`{m['seq']}` can be empty and its first item is taken unguarded: the handler answers 404 when it is")
