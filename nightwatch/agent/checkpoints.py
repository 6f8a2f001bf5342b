"""Checkpoints of an investigation: structured, atomic, verified, resumable.

A checkpoint holds what a reader needs (files examined, hypotheses, decisions, next steps) and what
the loop needs (the conversation state and the calls already metered). It is written after every
iteration and before a compaction, as a temporary file made durable and renamed into place, then
read back and checked against its digest: a checkpoint that does not verify does not exist (no
phantom checkpoints). A retried investigation resumes from the newest one that verifies; the few
kept before it cover a corrupt newest file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from nightwatch import clock
from nightwatch.atomic import atomic_write_text
from nightwatch.models import Model, ModelCall, ToolCall

KEEP = 3


class CheckpointError(Exception):
    """A checkpoint could not be written or did not verify; the message names the file."""


class Checkpoint(Model):
    checkpoint_id: str = ""  # assigned by the store: <fingerprint>-<sequence>
    run_id: str
    fingerprint: str
    agent: str = ""
    model: str = ""
    iteration: int
    trigger: Literal["iteration", "compaction"] = "iteration"
    created_at: datetime = Field(default_factory=clock.now)
    examined: list[str] = Field(default_factory=list)
    hypotheses: list[str] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    state: dict[str, Any]
    calls: list[ModelCall] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    files_examined: list[str] = Field(default_factory=list)
    digest: str = ""

    def body_digest(self) -> str:
        payload = self.model_dump(mode="json", exclude={"digest"})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class CheckpointStore:
    """Checkpoints of one error in one run, under `<home>/checkpoints/<run>/<fingerprint>/`."""

    def __init__(self, root: Path, keep: int = KEEP) -> None:
        self.root = Path(root)
        self.keep = keep
        self.skipped: list[str] = []  # files that failed verification when loading

    @classmethod
    def for_error(cls, home: Path, run_id: str, fingerprint: str) -> "CheckpointStore":
        safe_run = "".join(c if c.isalnum() or c in "-_" else "_" for c in run_id)
        return cls(Path(home) / "checkpoints" / safe_run / fingerprint)

    def save(self, checkpoint: Checkpoint) -> Checkpoint:
        """Write atomically, then verify by reading back; raise CheckpointError if it does not verify."""
        seq = int(self._files()[-1].stem) + 1 if self._files() else 1
        named = checkpoint.model_copy(update={"checkpoint_id": f"{checkpoint.fingerprint}-{seq:04d}"})
        sealed = named.model_copy(update={"digest": named.body_digest()})
        target = self.root / f"{seq:04d}.json"
        try:
            atomic_write_text(target, sealed.model_dump_json())
        except OSError as exc:
            raise CheckpointError(f"could not write checkpoint {target}: {exc}") from exc
        verified = self._verified(target)
        if verified is None or verified.checkpoint_id != sealed.checkpoint_id:
            raise CheckpointError(f"checkpoint {target} did not verify after writing")
        self._prune()
        return verified

    def latest(self) -> Checkpoint | None:
        """The newest checkpoint that verifies; files that do not are skipped and named in `skipped`."""
        for path in sorted(self._files(), reverse=True):
            checkpoint = self._verified(path)
            if checkpoint is not None:
                return checkpoint
            self.skipped.append(str(path))
        return None

    def clear(self) -> None:
        """Remove every checkpoint, the temporary file of a save a kill interrupted, and the empty folder."""
        for path in self._files() + (sorted(self.root.glob(".*.tmp")) if self.root.is_dir() else []):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.root.rmdir()

    def _files(self) -> list[Path]:
        return sorted(self.root.glob("[0-9][0-9][0-9][0-9].json")) if self.root.is_dir() else []

    def _verified(self, path: Path) -> Checkpoint | None:
        try:
            checkpoint = Checkpoint.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, ValidationError):
            return None
        return checkpoint if checkpoint.digest and checkpoint.digest == checkpoint.body_digest() else None

    def _prune(self) -> None:
        for stale in self._files()[: -self.keep]:
            stale.unlink(missing_ok=True)
