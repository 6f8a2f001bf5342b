"""Ruby's syntax tree (tree-sitter's Ruby grammar), for telling a commit that only reformatted a Ruby file from one
that changed it, and for following each line of a reformatted file back to where it came from.

A Ruby file's layout is not free: a line break ends a statement (`x = 1` then `-1` is two statements, `x = 1 -1` one),
a space decides whether a slash starts a regexp, a heredoc's lines are text. So the comparison is of the whole tree,
every node's kind and every token's text, in order: only what the tree does not hold (spaces, line breaks where they
end nothing, comments) may differ (not where a `__LINE__` stands: its value is its line), and a trailing comma in an
array, a hash or a call's arguments (`[:a, :b,]` is `[:a, :b]`; a block's `|a,|` is not, and stays). A comment Ruby
reads is kept: the magic comments (`# frozen_string_literal: true`, `# encoding: ...`, `# warn_indent: ...`,
`# shareable_constant_value: ...`) and the `#!` line. A file the grammar cannot parse whole (an ERROR or MISSING node
anywhere) is never formatting.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter_ruby
from tree_sitter import Language, Node, Parser

_LANGUAGE = Language(tree_sitter_ruby.language())
_MAGIC = re.compile(r"^#.*\b(frozen[_-]string[_-]literal|encoding|coding|warn[_-]indent|shareable[_-]constant[_-]value)\s*:",
                    re.IGNORECASE)
_CODING = re.compile(r"coding[:=]\s*([\w.-]+)", re.IGNORECASE)
RUBY_SUFFIXES = (".rb", ".rake", ".ru", ".gemspec")
RUBY_NAMES = ("Gemfile", "Rakefile")


def ruby_tokens(text: str) -> list[tuple[str, str]] | None:
    """The file's tree as a sequence: (kind, "") where a node opens, (kind, text) for a token, ("", "") where a node
    closes; None where it does not parse whole. A token whose meaning depends on the spaces or line breaks around it
    carries them: `p +1` is `p(+1)`, `p + 1` is `p() + 1`; `defined?(x).nil?` is not `defined? (x).nil?`; a comma or
    a ternary's colon that starts a line does not parse in Ruby."""
    tree = _parse(text)
    if tree is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    out: list[tuple[str, str]] = []
    last_end = 0
    for node, opening in _walk(tree):
        if node.child_count:
            out.append((node.type, "") if opening else ("", ""))
        elif opening:
            out.append((node.type, _token(node, data, last_end)))
            last_end = node.end_byte
    return out


def _token(node: Node, data: bytes, last_end: int) -> str:
    text = node.text.decode("utf-8", "replace") if node.text is not None else ""
    if text == "__LINE__" or text.startswith("=begin"):
        return f"{text}@{node.start_point[0]}:{node.start_point[1]}"  # its value is its line; Ruby reads it at column 0
    if node.type == "uninterpreted":  # what follows __END__, which Ruby reads only at the start of a line
        line_start = data.rfind(b"\n", 0, node.start_byte) + 1
        return data[line_start:node.start_byte].decode("utf-8", "replace") + text
    sides = _SPACED.get(node.type)
    if sides:
        before, after = _gap(data[last_end:node.start_byte]), _gap(data[node.end_byte:node.end_byte + 1])
        return f"{text}|{_side(before, sides[0])}{_side(after, sides[1])}"
    return text


def _gap(between: bytes) -> str:
    """What separates a token from its neighbour: nothing (0), spaces (s), or a line break (n)."""
    return "n" if b"\n" in between else "s" if between.isspace() else "0"


def _side(gap: str, kind: str) -> str:
    return gap if kind == "spaces" else ("n" if gap == "n" else "-") if kind == "newline" else "-"


# tokens Ruby reads by the spaces around them ("spaces": nothing, a space or a line break) or only by whether a line
# breaks there ("newline"), before and after: a unary operator (`p +1` is `p(+1)`, `p + 1` is `p() + 1`), a call's
# parenthesis (`defined?(x).nil?` is not `defined? (x).nil?`), a comma or a ternary's colon that starts a line (Ruby
# does not parse it), a line that breaks after a `rescue` modifier, a method chain's dot that starts a line
_SPACED: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("+", "-", "*", "&", "**", "%", "/", "::", "?", "<<", "[", "(", ":"), ("spaces", "spaces")),
    ",": ("newline", ""), ".": ("newline", ""), "&.": ("newline", ""), "rescue": ("", "newline"),
    "defined?": ("", "spaces"), "not": ("", "spaces"),
}


def ruby_lines_before(before: str, after: str) -> dict[int, int]:
    """For a change `ruby_tokens` finds formatting-only, the line of `before` each line of `after` came from: a line
    where a node starts maps to where that node starts in `before`, the outermost one deciding (a call rubocop joined
    onto one line: its first line; an `end`: its own `end`); a line where none starts (the rest of a string, a blank
    line, a comment) takes the nearest line above. Empty when either side does not parse whole."""
    trees = _parse(before), _parse(after)
    if trees[0] is None or trees[1] is None:
        return {}
    starts: dict[int, int] = {}
    olds = (node for node, opening in _walk(trees[0]) if opening)
    for new, opening in _walk(trees[1]):
        if opening:
            old = next(olds, None)
            if old is None:
                return {}
            starts.setdefault(new.start_point[0] + 1, old.start_point[0] + 1)
    found, nearest = {}, None
    for line in range(1, after.count("\n") + 2):
        nearest = starts.get(line, nearest)
        if nearest is not None:
            found[line] = nearest
    return found


def _parse(text: str) -> Node | None:
    try:
        tree = Parser(_LANGUAGE).parse(text.encode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeError):
        return None
    root = tree.root_node
    return None if root.has_error else root


def _walk(root: Node) -> Iterator[tuple[Node, bool]]:
    """(node, True) where each node opens and (node, False) where it closes, in order, comments Ruby does not read and
    trailing commas left out; without recursion, and asking each node only for its children (a node's parent or
    sibling is found by walking down from the root: a deeply nested file made that quadratic)."""
    stack: list[tuple[Node, bool]] = [(root, True)]
    while stack:
        node, opening = stack.pop()
        yield node, opening
        if opening and node.child_count:
            stack.append((node, False))
            children = node.children
            kept = [child for n, child in enumerate(children)
                    if not (child.type == "comment" and not _read_by_ruby(child)) and not _trailing_comma(node, children, n)]
            stack.extend((child, True) for child in reversed(kept))


def _trailing_comma(parent: Node, children: list[Node], n: int) -> bool:
    """A comma just before the closing bracket of an array, a hash or a call's arguments (not after a block argument
    or `...`, where Ruby rejects it)."""
    return (children[n].type == "," and parent.type in ("array", "hash", "argument_list") and n + 1 < len(children)
            and children[n + 1].type in ("]", ")", "}") and n > 0
            and children[n - 1].type not in ("block_argument", "forward_argument"))


def _read_by_ruby(comment: Node) -> bool:
    """A magic comment, the `#!` line, or an embedded document (`=begin`: Ruby reads it only at column 0)."""
    text = comment.text.decode("utf-8", "replace") if comment.text is not None else ""
    return bool(_MAGIC.match(text)) or (comment.start_point[0] == 0 and text.startswith("#!")) or text.startswith("=")


def ruby_encoding(text: str) -> str:
    """The encoding a Ruby file declares: a `coding:` or `coding=` in its first line, or its second after a `#!`."""
    lines = text.split("\n", 2)
    for number, line in enumerate(lines[:2]):
        if number == 1 and not lines[0].startswith("#!"):
            break
        found = _CODING.search(line) if line.lstrip().startswith("#") else None
        if found:
            return found.group(1).lower()
    return ""
