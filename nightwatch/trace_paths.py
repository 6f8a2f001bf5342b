"""Production paths in stack frames, mapped to the files of the repository.

A trace names files where the deployment keeps them: `/var/www/shop/releases/20261119143012/app/models/order.rb`
(Capistrano), `/app/app/models/order.rb` (Docker, Heroku), `/usr/src/app/…`, `/rails/…`, `/srv/shop/…`,
`C:\\inetpub\\shop\\…`, or an installed package under `site-packages/`. The repository knows them as
`app/models/order.rb`. Each frame is matched to the longest suffix of its path that is a file the code host
tracks; explicit prefixes (NIGHTWATCH_PATH_PREFIXES) are stripped first and win. Gem, bundle and
node_modules frames are framework frames whatever they end with (an engine's `app/controllers/…` is the
gem's, not the application's); an installed Python package maps to the repository when the repository
holds that package (at its root or under `src/`). Nothing here reads a file: only the list of tracked paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from nightwatch.codehosts.base import CodeHostError
from nightwatch.models import StackFrame, TraceData

Kind = Literal["app", "framework", "unknown"]

_DRIVE = re.compile(r"^[A-Za-z]:(?=/)")
# Third-party code that is never the application's, even when its tail looks like an application path.
_DEPENDENCY_DIRS = ("gems", "bundle", "node_modules", "bower_components", ".bundle")
_PACKAGE_DIRS = ("site-packages", "dist-packages")  # installed Python packages: the application's own, or not
_SYSTEM_MARKERS = re.compile(r"(^|/)(usr/(local/)?lib|lib/ruby|lib/python\d|lib64|opt/hostedtoolcache|rubies|\.rbenv|\.pyenv)(/|$)")
_PSEUDO = ("<", "(", "[", "internal:", "node:")
UNMAPPED_NOTE_LIMIT = 5


@dataclass(frozen=True)
class Located:
    """Where a production path lives: a repository file (`path`), framework code, or nowhere known."""

    kind: Kind
    path: str  # the repository-relative path for `app`, else the normalised production path
    how: str = ""  # "as given", "prefix /var/www/shop/current/", "suffix", "package"


def normalise(path: str) -> str:
    """Forward slashes, no `file://`, no drive letter, no `./`; a leading `/` kept (it means absolute)."""
    text = path.strip().removeprefix("file://").replace("\\", "/")
    text = _DRIVE.sub("", text)
    while text.startswith("./"):
        text = text[2:]
    return re.sub(r"/{2,}", "/", text)


def parse_prefixes(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """`NIGHTWATCH_PATH_PREFIXES`: comma-separated deploy roots, e.g. `/var/www/shop/current/,/srv/shop/`."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    out = []
    for item in items:
        prefix = normalise(item)
        if prefix and prefix != "/":
            out.append(prefix.rstrip("/") + "/")
    return tuple(out)


class PathMap:
    """Maps production paths to repository paths by the files the code host tracks."""

    def __init__(self, tracked: Iterable[str], prefixes: str | Sequence[str] | None = (), problem: str = "") -> None:
        self.tracked = frozenset(p for p in tracked if p)
        self.prefixes = parse_prefixes(prefixes)
        self.problem = problem  # why the host's files could not be listed; then nothing maps

    @classmethod
    def of_host(cls, host: object, prefixes: str | Sequence[str] | None = ()) -> "PathMap":
        """The map of a code host; a host that cannot list its files maps nothing (frames keep their paths)."""
        lister = getattr(host, "tracked_files", None)
        if not callable(lister):
            return cls((), prefixes, f"{getattr(host, 'name', 'the code host')} cannot list its files")
        try:
            return cls(lister(), prefixes)
        except CodeHostError as exc:
            return cls((), prefixes, str(exc))

    def locate(self, raw: str) -> Located:
        path = normalise(raw)
        if not path or path.startswith(_PSEUDO):
            return Located("unknown", path)
        for prefix in self.prefixes:
            if path.startswith(prefix) and path[len(prefix):] in self.tracked:
                return Located("app", path[len(prefix):], f"prefix {prefix}")
        relative = path.lstrip("/")
        if not path.startswith("/") and relative in self.tracked:
            return Located("app", relative, "as given")
        parts = [p for p in relative.split("/") if p]
        if any(part in _DEPENDENCY_DIRS for part in parts[:-1]):
            return Located("framework", path)
        package = next((i for i, part in enumerate(parts[:-1]) if part in _PACKAGE_DIRS), None)
        if package is not None:
            found = self._suffix(parts[package + 1 :], whole_only=True)
            return Located("app", found, "package") if found else Located("framework", path)
        found = self._suffix(parts)
        if found:
            return Located("app", found, "suffix")
        if _SYSTEM_MARKERS.search(relative):
            return Located("framework", path)
        return Located("unknown", path)

    def _suffix(self, parts: list[str], whole_only: bool = False) -> str | None:
        """The longest tail of `parts` that is a tracked file, as is or under `src/` (Python's src layout)."""
        starts = [0] if whole_only else range(len(parts))
        for start in starts:
            tail = "/".join(parts[start:])
            for candidate in (tail, f"src/{tail}"):
                if candidate in self.tracked:
                    return candidate
        return None

    def repo_path(self, requested: str) -> tuple[str, str | None]:
        """A path the agent asked for, as the repository knows it, and a note when it was mapped.

        A tracked path is returned as is; a production path that maps to a tracked file is returned mapped with
        a note; anything else is returned unchanged, for the code host to serve or refuse on its own rules.
        """
        if not isinstance(requested, str) or not self.tracked:
            return requested, None
        if normalise(requested) in self.tracked:
            return requested, None
        found = self.locate(requested)
        if found.kind == "app" and found.path != requested:
            return found.path, f"(mapped the production path {requested} to the repository file {found.path})"
        return requested, None


def locate_frames(traces: TraceData, paths: PathMap) -> TraceData:
    """The traces with every frame named by its repository path and marked application or framework code.

    A frame that maps keeps its production path in `deployed_path`; a frame of neither the repository nor a
    known library stays application code under its production path, and a note says it was not found.
    """
    if not traces.stack_frames:
        return traces
    if not paths.tracked:
        note = f"stack frames keep their production paths: {paths.problem or 'the repository lists no files'}"
        return traces.model_copy(update={"notes": [*traces.notes, note]})
    frames, unmapped = [], []
    for frame in traces.stack_frames:
        located = paths.locate(frame.file)
        frames.append(_located_frame(frame, located))
        if located.kind == "unknown" and frame.in_app:
            unmapped.append(frame.file)
    notes = list(traces.notes)
    if unmapped:
        shown = ", ".join(list(dict.fromkeys(unmapped))[:UNMAPPED_NOTE_LIMIT])
        notes.append(f"{len(unmapped)} application frame(s) name files that are not in the repository: {shown}")
    return traces.model_copy(update={"stack_frames": frames, "notes": notes})


def _located_frame(frame: StackFrame, located: Located) -> StackFrame:
    if located.kind == "app":
        moved = located.path != frame.file
        return frame.model_copy(
            update={"file": located.path, "in_app": True, "located": True, "deployed_path": frame.file if moved else ""}
        )
    if located.kind == "framework":
        return frame.model_copy(update={"in_app": False})
    return frame


def mapped_share(traces: TraceData) -> tuple[int, int]:
    """(application frames found in the repository, application frames) of one error's traces."""
    app = [f for f in traces.stack_frames if f.in_app]
    return sum(1 for f in app if f.located), len(app)

