"""Text from production or from the model, made inert where it is rendered.

- `visible`: bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C), zero-width characters
  and C1 controls are removed, so nothing reads differently from what it is (a reversed file name, a
  hidden word) in a terminal, Slack, GitHub or a document.
- `no_mentions`: `@here`, `@channel`, `@everyone`, `@team` and any `@name` cannot notify anyone: a word
  joiner follows the `@` (in prose only: code spans are left copy-pasteable, and mentions never fire
  inside them).
- `no_links`: Markdown links and images cannot render and bare URLs cannot autolink (`https[:]//…`),
  so an error message cannot put a link or a tracking pixel into an issue or a report.
- `no_references`: `#12` and `owner/repo#12` cannot link an issue (GitHub would add a "mentioned" event to
  it, in this repository or another).
- `outside_code`: applies one of these to the text outside Markdown code spans only: inside one nothing
  fires, and what is there stays copy-pasteable.
"""

from __future__ import annotations

import re
from typing import Callable

JOINER = "\u2060"
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u0080-\u009f]")
_MENTION = re.compile(r"(?<!\w)@(?=[A-Za-z0-9_!])")
_REFERENCE = re.compile(r"#(?=\d)")
# A code span as Markdown reads one: a whole run of backticks that no backslash escapes (`\`` is a literal backtick, and
# what follows it is prose, where `<img …>` would render), then the same run closing it.
_CODE_SPAN = re.compile(r"(?<![\\`])(`+)(?:.*?[^`])?\1(?!`)")
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,20}):(//)")
_WWW = re.compile(r"(?i)\bwww\.")
_LINK_OPEN = re.compile(r"!?\[")


def visible(text: str) -> str:
    return _INVISIBLE.sub("", text)


def no_mentions(text: str) -> str:
    return _MENTION.sub("@" + JOINER, text)


def no_references(text: str) -> str:
    return _REFERENCE.sub("#" + JOINER, text)


def outside_code(text: str, neutralise: Callable[[str], str]) -> str:
    """`neutralise` applied to the text between code spans; each span kept as written."""
    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [neutralise(text[at:span.start()]), span.group(0)]
        at = span.end()
    return "".join(out + [neutralise(text[at:])])


def no_links(text: str) -> str:
    text = _SCHEME.sub(lambda m: f"{m.group(1)}[:]{m.group(2)}", text)
    text = _WWW.sub("www[.]", text)
    return _LINK_OPEN.sub(lambda m: m.group(0).replace("[", "\\["), text)
