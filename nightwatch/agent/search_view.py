"""What `search_code` shows: matching lines grouped by file, a little context when the hits are few,
and an exact count of what was left out.

A broad search over a real application answers hundreds of lines, and a path repeated on each of them
costs as much as the line. So hits are grouped under their file; the first SHOWN are listed, and the
rest are counted per file ("… 41 more matches in 12 files: app/models/story.rb 9, …") so the model
knows where to narrow with `path_glob`. When a search finds only a few lines, each comes with the line
before and after it, which is usually what the next read would have asked for. The host is asked for
up to SCANNED hits, so the count of what was left out is exact below that and "at least" above it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable

from nightwatch.codehosts.base import SearchHit, hit_text

SHOWN = 20  # hits listed
SCANNED = 200  # hits counted: the left-out count is exact below this
CONTEXT_HITS = 5  # a search with at most this many hits shows each with a line of context either side
CONTEXT_LINES = 1
FILES_NAMED = 8  # files named in the left-out line

Lines = Callable[[str], dict[int, str]]  # path -> its numbered lines (empty when it cannot be read)


def search_view(query: str, hits: list[SearchHit], lines_of: Lines | None = None, exhaustive: bool = True) -> str:
    """The hits of one search as the model sees them. `exhaustive`: the host searched every file (a local checkout);
    GitHub's code search looks at its best-ranked files only, so its counts are lower bounds and say so."""
    if not hits:
        return f"No matches for {query!r}" + ("." if exhaustive else " in the files the code host's search ranked first.")
    shown, left = hits[:SHOWN], hits[SHOWN:]
    files = list(dict.fromkeys(h.path for h in hits))
    exact = exhaustive and len(hits) < SCANNED
    lower = "" if exact else "at least "
    head = (f"{lower}{len(hits)} matching line{'s' if len(hits) != 1 else ''} in {lower}{len(files)} "
            f"file{'s' if len(files) != 1 else ''}" + ("" if exhaustive else " (the code host's search looks at its "
                                                        "best-ranked files only)"))
    out = [head + (f" (the first {len(shown)} below):" if left else ":")]
    context = lines_of if lines_of is not None and len(hits) <= CONTEXT_HITS else None
    for path in dict.fromkeys(h.path for h in shown):
        out.append(path_line(path))
        out.extend(_file_lines([h for h in shown if h.path == path], context(path) if context else {}))
    if left:
        out.append(_left_out(left, not exact))
    return "\n".join(out)


def _file_lines(hits: list[SearchHit], numbered: dict[int, str]) -> list[str]:
    """`  42: text` for each hit; with the file's lines known, its neighbours as `  41  text` (each line once)."""
    if not numbered:
        return [f"  {h.line}: {h.text}" for h in hits]
    matched = {h.line: h.text for h in hits}
    wanted = sorted({n for line in matched if line > 0 for n in range(line - CONTEXT_LINES, line + CONTEXT_LINES + 1)
                     if n in numbered} | set(matched))
    return [f"  {n}: {matched[n]}" if n in matched else f"  {n}  {hit_text(numbered[n])}" for n in wanted]


def _left_out(left: list[SearchHit], capped: bool) -> str:
    by_file = Counter(h.path for h in left)
    named = ", ".join(f"{path} {n}" for path, n in by_file.most_common(FILES_NAMED))
    more = f", and {len(by_file) - FILES_NAMED} more files" if len(by_file) > FILES_NAMED else ""
    count = f"at least {len(left)}" if capped else str(len(left))
    return (f"… {count} more matching lines not shown, in {len(by_file)} file{'s' if len(by_file) != 1 else ''}: "
            f"{named}{more}. Narrow with path_glob or a longer query.")


def path_line(path: str) -> str:
    """A file's heading line: the path, or the path JSON-quoted when it could be read as something else (a line
    break in it, a trailing colon, a leading space, quote or ellipsis)."""
    plain = path and not any(c in path for c in "\n\r") and not path.endswith(":") and not path.startswith((" ", '"', "…"))
    return path if plain else json.dumps(path)


def parse_hits(text: str) -> list[tuple[str, int, str]]:
    """(path, line, text) of every matching line of a search result, in this module's format or as `path:line: text`."""
    out, path = [], ""
    for raw in text.splitlines():
        plain = re.match(r"^(?P<path>[^:\s]+):(?P<line>\d+): ?(?P<text>.*)$", raw)
        if plain:
            out.append((plain["path"], int(plain["line"]), plain["text"]))
        elif match := re.match(r"^  (?P<line>\d+): (?P<text>.*)$", raw):
            out.append((path, int(match["line"]), match["text"]))
        elif raw.startswith('"'):
            try:
                path = json.loads(raw)
            except ValueError:
                continue
        elif raw and not raw.startswith((" ", "…")) and not raw.endswith(":"):
            path = raw
    return out
