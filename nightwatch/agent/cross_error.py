"""Cross-error context: what this night already found, for the next investigation.

Production errors cluster. A short note per finished analysis (under 200 characters: the error, the
root cause, the files) lets a later investigation say "the same defect as error #1" instead of
reading the same files again. At most four notes go into a first message, newest first.
"""

from __future__ import annotations

import threading

from nightwatch.models import ErrorAnalysisResult
from nightwatch.redact import clean

NOTE_CHARS = 200
MAX_NOTES = 4


def note_for(result: ErrorAnalysisResult) -> str | None:
    if result.analysis is None:
        return None
    files = ", ".join(dict.fromkeys([c.path for c in result.analysis.file_changes] + result.files_examined[:2]))
    text = f"{result.error.error_class} in {result.error.transaction}: {result.analysis.root_cause}" + (f" (files: {files})" if files else "")
    text, _ = clean(text, limit=NOTE_CHARS * 4)
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"


class CrossErrorNotes:
    """The night's notes, shared by concurrent investigations."""

    def __init__(self) -> None:
        self._notes: list[tuple[str, str]] = []  # (fingerprint, note)
        self._lock = threading.Lock()

    def add(self, result: ErrorAnalysisResult) -> None:
        note = note_for(result)
        if note:
            with self._lock:
                if all(fp != result.fingerprint for fp, _ in self._notes):
                    self._notes.append((result.fingerprint, note))

    def recent(self, excluding: str = "") -> list[str]:
        with self._lock:
            return [n for fp, n in reversed(self._notes) if fp != excluding][:MAX_NOTES]
