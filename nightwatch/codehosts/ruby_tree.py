"""Ruby's syntax tree (tree-sitter's Ruby grammar), for telling a commit that only reformatted a Ruby file from one
that changed it, and for following each line of a reformatted file back to where it came from.

A Ruby file's layout is not free: a line break ends a statement (`x = 1` then `-1` is two statements, `x = 1 -1` one),
a space decides whether a slash starts a regexp, a heredoc's lines are text. So the comparison is of the whole tree,
every node's kind and every token's text, in order: only what the tree does not hold (spaces, line breaks where they
end nothing, comments) may differ (not where a `__LINE__` stands: its value is its line), and a trailing comma in an array, a hash or a call's arguments (`[:a, :b,]` is
`[:a, :b]`; a block's `|a,|` is not, and stays). A comment Ruby reads is kept: the magic comments (`# frozen_string_literal: true`,
`# encoding: ...`, `# warn_indent: ...`, `# shareable_constant_value: ...`) and the `#!` line. A file the grammar
cannot parse whole (an ERROR or MISSING node anywhere) is never formatting.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter_ruby
from tree_sitter import Language, Node, Parser

_LANGUAGE = Language(tree_sitter_ruby.language())
_MAGIC = re.compile(r"^#.*\b(frozen[_-]string[_-]literal|encoding|coding|warn[_-]indent|shareable[_-]constant[_-]value)\s*:",
                    re.IGNORECASE)
RUBY_SUFFIXES = (".rb", ".rake", ".ru", ".gemspec")
RUBY_NAMES = ("Gemfile", "Rakefile")


def ruby_tokens(text: str) -> list[tuple[str, str]] | None:
    """The file's tree as a sequence: (kind, "") where a node opens, (kind, text) for a token, ("", "") where a node
    closes; None where it does not parse whole."""
    tree = _parse(text)
    if tree is None:
        return None
    out: list[tuple[str, str]] = []
    for node, opening in _walk(tree):
        if node.child_count == 0:
            if opening:
                text = node.text.decode("utf-8", "replace") if node.text is not None else ""
                out.append((node.type, f"{text}@{node.start_point[0]}" if text == "__LINE__" else text))
        else:
            out.append((node.type, "") if opening else ("", ""))
    return out


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
    """(node, True) where each node opens and (node, False) where it closes, in order, comments Ruby does not read
    left out; without recursion (a deeply nested file is as deep as it likes)."""
    stack: list[tuple[Node, bool]] = [(root, True)]
    while stack:
        node, opening = stack.pop()
        if opening and (node.type == "comment" and not _read_by_ruby(node) or _trailing_comma(node)):
            continue
        yield node, opening
        if opening and node.child_count:
            stack.append((node, False))
            stack.extend((child, True) for child in reversed(node.children))


def _trailing_comma(node: Node) -> bool:
    following = node.next_sibling
    return (node.type == "," and following is not None and following.type in ("]", ")", "}")
            and node.parent is not None and node.parent.type in ("array", "hash", "argument_list"))


def _read_by_ruby(comment: Node) -> bool:
    text = comment.text.decode("utf-8", "replace") if comment.text is not None else ""
    return bool(_MAGIC.match(text)) or (comment.start_point[0] == 0 and text.startswith("#!"))
