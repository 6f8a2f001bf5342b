"""Text from production or from the model, made inert where it is rendered.

- `visible`: bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C), zero-width characters
  and C1 controls are removed, so nothing reads differently from what it is (a reversed file name, a
  hidden word) in a terminal, Slack, GitHub or a document.
- `no_mentions`: `@here`, `@channel`, `@everyone`, `@team` and any `@name` cannot notify anyone: a word
  joiner follows the `@` (in prose only: code spans are left copy-pasteable, and mentions never fire
  inside them).
- `no_links`: Markdown links and images cannot render and bare URLs cannot autolink (`https[:]//…`),
  so an error message cannot put a link or a tracking pixel into an issue or a report.
"""

from __future__ import annotations

import re

JOINER = "\u2060"
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u0080-\u009f]")
_MENTION = re.compile(r"(?<![\w`])@(?=[A-Za-z0-9_!])")
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,20}):(//)")
_WWW = re.compile(r"(?i)\bwww\.")
_LINK_OPEN = re.compile(r"!?\[")


def visible(text: str) -> str:
    return _INVISIBLE.sub("", text)


def no_mentions(text: str) -> str:
    return _MENTION.sub("@" + JOINER, text)


def no_links(text: str) -> str:
    text = _SCHEME.sub(lambda m: f"{m.group(1)}[:]{m.group(2)}", text)
    text = _WWW.sub("www[.]", text)
    return _LINK_OPEN.sub(lambda m: m.group(0).replace("[", "\\["), text)
