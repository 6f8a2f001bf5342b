"""What `read_file` shows of a long file when no range was asked for: a window and an outline.

A 900-line model read whole costs 30K characters per read, and the answer needs the lines around the
frame plus the shape of the rest. So a long file answers with a window around the line the trace points at
(or its head when the trace does not name it), and an outline of everything else: class, module and method
signatures, the declarations that change behaviour (Rails callbacks and filters, associations, validations,
`rescue_from`; Python decorators), each with its line number. The model asks for any range it wants next;
nothing is lost, and `recall_context` still finds what was shown.
"""

from __future__ import annotations

import re

WHOLE_FILE_LINES = 120  # files up to this long are shown whole
WINDOW_BEFORE, WINDOW_AFTER = 30, 30
HEAD_LINES = 30
OUTLINE_CHARS = 140
_NUMBERED = re.compile(r"^\s*(\d+)\| ?(.*)$")
_OUTLINE = re.compile(
    r"^\s*(?:class|module|def|async\s+def|function|export\s+(?:default\s+)?(?:class|function|const)|@\w[\w.]*"
    r"|(?:prepend_|append_|skip_)?(?:before|after|around)_(?:action|filter)\b"
    r"|(?:before|after|around)_(?:validation|save|create|update|destroy|commit|rollback|initialize|find)\b"
    r"|belongs_to|has_many|has_one|has_and_belongs_to_many|validates?\b|scope\b|rescue_from|delegate\b|enum\b"
    r"|include\b|extend\b|attr_(?:reader|writer|accessor)|private\b|protected\b|public\b)"
)


def numbered_lines(rendered: str) -> list[tuple[int, str]]:
    """The `  42| code` lines of a numbered read (a truncation note or mapping note is left out)."""
    out = []
    for raw in rendered.splitlines():
        match = _NUMBERED.match(raw)
        if match:
            out.append((int(match.group(1)), match.group(2)))
    return out


def file_view(path: str, rendered: str, focus: int | None) -> str:
    """The whole numbered file when it is short; else a window (around `focus`, or the head) and an outline."""
    lines = numbered_lines(rendered)
    if len(lines) <= WHOLE_FILE_LINES:
        return rendered
    total = lines[-1][0]
    first, last = (max(1, focus - WINDOW_BEFORE), focus + WINDOW_AFTER) if focus else (1, HEAD_LINES)
    window = [(n, t) for n, t in lines if first <= n <= last]
    outline = _outline([(n, t) for n, t in lines if n < first or n > last])
    where = f"around line {focus}, the line the trace names" if focus else "its head"
    header = (f"[{path}: {total} lines. Showing lines {window[0][0]}-{window[-1][0]} ({where}) and an outline of the "
              "rest (signatures and declarations with their line numbers). Ask read_file with start_line/end_line "
              "for any other range.]")
    body = [header, *(f"{n:>5}| {t}" for n, t in window)]
    if outline:
        body += ["", "outline of the rest of the file:", *outline]
    return "\n".join(body) + "\n"


def _outline(lines: list[tuple[int, str]]) -> list[str]:
    """Signature and declaration lines, with the continuation lines of a declaration that ends with a comma."""
    out, previous = [], None
    continuing = False
    for number, text in lines:
        if _OUTLINE.match(text) or (continuing and previous == number - 1):
            cut = text if len(text) <= OUTLINE_CHARS else text[:OUTLINE_CHARS] + " …"
            out.append(f"{number:>5}| {cut}")
            continuing = text.rstrip().endswith((",", "(", "[", "\\"))
            previous = number
        else:
            continuing = False
    return out
