"""Formatting-only changes: what black, ruff format, isort, rubocop -a or standardrb do to a file without changing what
it does. Blame looks through them, as it looks through whitespace-only edits: "introduced by Format all the things"
names whoever ran the formatter, and the team routes the issue to the wrong person.

A change is formatting-only when the whole file before and after reads as the same tokens once layout is set aside:
whitespace and line breaks (Python's indentation structure is kept: there it is meaning), comments, a trailing comma
where it changes nothing, a string's quotes where it has no escape or interpolation, a number's letter case, Python's
parentheses that only group a whole right-hand side, return value, condition or import, and Ruby's `:key =>` against
`key:`. Anything else is a change. Python files are read with Python's own tokenizer; Ruby files with a lexer that
keeps string, symbol and regular-expression literals whole and gives up (a change, not formatting) on the literals it
does not read (heredocs, `%w[]` and the other percent literals, `=begin` blocks). Other languages: never formatting.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from pathlib import PurePosixPath

_RUBY = {".rb", ".rake", ".ru", ".gemspec"}
_RUBY_NAMES = {"Rakefile", "Gemfile", "Guardfile", "Capfile"}
_OPENERS, _CLOSERS = "([{", ")]}"
_PYTHON_KEYWORDS = frozenset(keyword.kwlist) | {"print", "exec"}  # `return (x,)` is a tuple, `f(x,)` a call
_STATEMENT_END = "<end>"
_CODING = re.compile(r"coding[:=]\s*[-\w.]+")
_RUBY_MAGIC = re.compile(r"^#\s*(?:-\*-.*)?(?:frozen_string_literal|encoding|coding|warn_indent|shareable_constant_value)\s*:", re.I)


def formatting_only(before: str, after: str, path: str) -> bool:
    """Whether a change of `path` from `before` to `after` (the whole file on each side: a trailing comma or a
    parenthesis means something only in its statement) differs only in layout. A change that added or removed only
    blank lines and comments is formatting too."""
    if before == after:
        return False
    name = PurePosixPath(path)
    if name.suffix in (".py", ".pyi"):
        read = _python_tokens
    elif name.suffix in _RUBY or name.name in _RUBY_NAMES:
        read = _ruby_tokens
    else:
        return False
    old, new = read(before), read(after)
    return old is not None and old == new


# Python ----------------------------------------------------------------------------------------------------------
def _python_tokens(text: str) -> list[str] | None:
    """Python's own tokens (None where the text does not tokenize): statements end in a marker, blocks keep their
    INDENT and DEDENT (not their width), comments and blank lines are gone."""
    out: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, value = token.type, token.string
            if kind == tokenize.COMMENT and token.start[0] <= 2 and _CODING.search(value):
                out.append(value)  # the source's encoding (PEP 263): how its bytes read
                continue
            if kind in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if kind == tokenize.NEWLINE:
                out.append(_STATEMENT_END)
            elif kind == tokenize.INDENT:
                out.append("<indent>")
            elif kind == tokenize.DEDENT:
                out.append("<dedent>")
            elif kind == tokenize.STRING:
                out.append(_python_string(value))
            elif kind == tokenize.NUMBER:
                out.append(value.lower())
            else:
                out.append(value)
    except (tokenize.TokenError, SyntaxError):
        return None
    return _without_grouping_parens(_without_idle_commas(out, python=True))


def _python_string(literal: str) -> str:
    prefix = re.match(r"[A-Za-z]*", literal).group()  # type: ignore[union-attr]
    body = literal[len(prefix):]
    if body[:3] in ('"""', "'''") or "\\" in body:
        return prefix.lower() + body
    return f'{prefix.lower()}"{body[1:-1]}"'


_GROUP_AFTER = frozenset({"=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", ">>=", "<<=", "&=", "|=", "^=", "return",
                          "if", "elif", "while", "import"})


def _without_grouping_parens(tokens: list[str]) -> list[str]:
    """Parentheses that only group a whole expression: black adds them to split a long right-hand side, return value,
    condition or import (`x = (a.b()...)`, `from m import (a, b)`). Dropped where they open right after `=`,
    `return`, `if`, `elif`, `while` or `import` and close at the statement's end (or the condition's colon); a
    condition's may not hold a comma at their level (`if (a, b):` tests a tuple), while `x = a, b` and `return a, b`
    make the same tuple with or without them. Elsewhere a parenthesis can change precedence (`-(a + b)`,
    `not (a or b)`) or make a tuple, and stays."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, token in enumerate(tokens):
        if token in _OPENERS:
            stack.append(i)
        elif token in _CLOSERS and stack:
            pairs[stack.pop()] = i
    dropped: set[int] = set()
    for start, end in pairs.items():
        before = tokens[start - 1] if start else ""
        if tokens[start] != "(" or before not in _GROUP_AFTER:
            continue
        after = tokens[end + 1] if end + 1 < len(tokens) else _STATEMENT_END
        condition = before in ("if", "elif", "while")
        if not (after == _STATEMENT_END or (after == ":" and condition)):
            continue
        depth, comma = 0, False
        for token in tokens[start + 1:end]:
            depth += 1 if token in _OPENERS else -1 if token in _CLOSERS else 0
            comma = comma or (depth == 0 and token == ",")
        if comma and condition:
            continue
        dropped |= {start, end}
    return [t for i, t in enumerate(tokens) if i not in dropped]


def _without_idle_commas(tokens: list[str], python: bool) -> list[str]:
    """Trailing commas dropped where they change nothing: before any closing bracket, except in Python the comma that
    makes a one-element tuple: `(x,)` (a parenthesis that is no call) and `d[k,]` (a subscript), with no other comma."""
    out: list[str] = []
    groups: list[list] = []  # per open bracket: the bracket, whether it is a call or subscript, commas at its level
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in _OPENERS:
            before = out[-1] if out else ""
            call = before[-1:].isalnum() or before[-1:] in ("_", ")", "]", '"', "'")
            groups.append([token, call and not (python and before in _PYTHON_KEYWORDS), 0])
        elif token in _CLOSERS:
            if groups:
                groups.pop()
        elif token == "," and groups:
            groups[-1][2] += 1
            opener, call, commas = groups[-1]
            lone = python and commas == 1 and ((opener == "(" and not call) or (opener == "[" and call))
            if nxt in _CLOSERS and not lone:  # `(x,)` is a tuple and `d[k,]` indexes with one: not idle
                continue
        out.append(token)
    return out


# Ruby ------------------------------------------------------------------------------------------------------------
_RUBY_UNREAD = re.compile(r"<<[~-]?(?:[A-Z_]\w*|'[^'\n]*'|\"[^\"\n]*\")|^=begin", re.M)
_PERCENT = re.compile(r"%(?P<type>[wWiIqQrsx]?)(?P<open>[\[({<|!/^])")
_PAIRS = {"[": "]", "(": ")", "{": "}", "<": ">"}
_RUBY_TOKEN = re.compile(r"""
    (?P<space>[ \t\f\r]+|\\\n)
  | (?P<newline>\n)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\#]|\\.|\#(?!\{)|\#\{(?:[^{}"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\{[^{}]*\})*\})*"|'(?:[^'\\]|\\.)*')
  | (?P<rocket>:(?P<key>[A-Za-z_]\w*[?!]?)\s*=>)
  | (?P<symbol>:[A-Za-z_]\w*[?!=]?)
  | (?P<name>[A-Za-z_]\w*[?!]?|\d[\w.]*|@@?\w+|\$\w+)
  | (?P<op><=>|===|\*\*=|\|\|=|&&=|<<=|>>=|\.\.\.|\*\*|==|!=|<=|>=|=>|->|<<|>>|\+=|-=|\*=|/=|%=|&&|\|\||::|\.\.|=~|!~|&\.|\S)
""", re.X)
_REGEX = re.compile(r"/(?:[^/\\\n]|\\.)*/[a-z]*")
_REGEX_AFTER = frozenset({"(", ",", "[", "{", "=", "=>", "=~", "!~", "==", "!=", "&&", "||", "!", "?", ":", ";", "|",
                          "when", "if", "elsif", "unless", "while", "until", "and", "or", "not", "return", "<newline>",
                          "split", "match", "match?", "scan", "gsub", "sub", "gsub!", "sub!", "index", "include?"})


def _ruby_tokens(text: str) -> list[str] | None:
    """Ruby's tokens as far as layout goes (None for a file with a literal this does not read): string, symbol and
    regular-expression literals whole, `:key =>` read as `key:`, comments and whitespace gone."""
    if _RUBY_UNREAD.search(text):
        return None
    out: list[str] = []
    position, previous = 0, "<newline>"
    while position < len(text):
        read = _ruby_next(text, position, previous)
        if read is None:
            return None
        tokens, position, previous = read
        out += tokens
    return _without_idle_commas(out, python=False)


def _ruby_next(text: str, position: int, previous: str) -> tuple[list[str], int, str] | None:
    """The tokens at `position` (none for layout), where they end and what the next one follows; None where this
    cannot tell (`a %w[b]` against `a % [b]`, quotes inside an interpolation)."""
    char = text[position]
    ambiguous = text[position - 1:position] in (" ", "\t") and text[position + 1:position + 2] not in (" ", "\t", "=")
    if char == "/" and (previous in _REGEX_AFTER or ambiguous) and (regex := _REGEX.match(text, position)):
        return [regex.group()], regex.end(), "/regex/"
    if char == "%" and (percent := _PERCENT.match(text, position)):
        literal = _percent_literal(text, percent) if previous in _REGEX_AFTER else None
        return None if literal is None else ([literal[0]], literal[1], literal[0])
    match = _RUBY_TOKEN.match(text, position)
    if match is None:
        return None
    group, token = match.lastgroup, match.group()
    if group == "comment" and _RUBY_MAGIC.match(token):  # `# frozen_string_literal: true` freezes every literal
        return [token.lower().replace(" ", "")], match.end(), previous
    if group in ("space", "comment"):
        return [], match.end(), previous
    if group == "newline":
        return [], match.end(), "<newline>"
    if group == "rocket":
        return [match.group("key"), ":"], match.end(), ":"
    if group == "string":
        token = _ruby_string(token)
    elif token in ('"', "'", "`"):
        return None
    return [token], match.end(), token


def _percent_literal(text: str, percent: re.Match[str]) -> tuple[str, int] | None:
    """A percent literal (`%w[a b]`, `%i(x y)`, `%q{...}`, `%r|...|`) whole, and where it ends; a word list's words
    one space apart (`%w[a  b]` is `%w[a b]`)."""
    opener = percent.group("open")
    closer = _PAIRS.get(opener, opener)
    depth, i = 1, percent.end()
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == closer:
            depth -= 1
            if depth == 0:
                body = text[percent.end():i]
                if percent.group("type") in ("w", "W", "i", "I"):
                    body = " ".join(body.split())
                flags = re.match(r"[a-z]*", text[i + 1:]).group() if percent.group("type") == "r" else ""  # type: ignore[union-attr]
                return f"%{percent.group('type')}{opener}{body}{closer}{flags}", i + 1 + len(flags)
        elif char == opener and closer != opener:
            depth += 1
        i += 1
    return None


def _ruby_string(literal: str) -> str:
    """Single quotes neither interpolate nor unescape: `'a'` and `"a"` are one string only without `\\`, `#{`, `#@`
    or `#$`."""
    inner = literal[1:-1]
    return f'"{inner}"' if "\\" not in inner and not re.search(r"#[{@$]", inner) else literal
