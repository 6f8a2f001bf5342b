"""Where a night's task results and its cache live: NIGHTWATCH_RESULT_STORAGE, the same for every worker.

Prefect keeps a cached task's result in the flow's result storage, and by default that is the worker's
own `$PREFECT_HOME/storage`: a retry picked up by another worker finds nothing there and pays for every
step again. A night therefore points its result store, before its first task, at one storage that all
its workers share:

- unset: `<NIGHTWATCH_HOME>/results` (shared whenever NIGHTWATCH_HOME is: a shared volume);
- a path (`/mnt/nightwatch/results`, `./results`, `~/results`, `file:///…`): a local-file-system folder;
- an fsspec URL (`s3://bucket/nightwatch`, `gs://…`, `az://…`, `smb://…`): remote storage through fsspec
  (the protocol's package, e.g. `s3fs`, installed on the workers);
- `block-type/block-name` (`s3-bucket/nightwatch-results`, `local-file-system/team-results`): a saved
  Prefect filesystem block.

Resolved when the night starts, not when the flow module is imported, so a setting in the deployment,
the worker's environment or the night's settings block all apply.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nightwatch.runtime import ConfigurationError
from nightwatch.settings import Settings

VARIABLE = "NIGHTWATCH_RESULT_STORAGE"
_BLOCK_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*/[A-Za-z0-9][A-Za-z0-9_-]*$")
_PATH_START = ("/", "./", "../", "~")


def configured(settings: Settings) -> Any:
    """The WritableFileSystem the settings name; a ConfigurationError naming the variable when it cannot work."""
    from prefect.filesystems import LocalFileSystem, RemoteFileSystem

    spec = (settings.result_storage or "").strip()
    if not spec:
        return LocalFileSystem(basepath=str(settings.resolved_home() / "results"))
    if spec.startswith("file://"):
        return LocalFileSystem(basepath=str(Path(spec.removeprefix("file://")).expanduser().resolve()))
    if "://" in spec:
        _check_protocol(spec)
        return RemoteFileSystem(basepath=spec.rstrip("/"))
    if _BLOCK_SLUG.match(spec) and not spec.startswith(_PATH_START):
        return _saved_block(spec)
    return LocalFileSystem(basepath=str(Path(spec).expanduser().resolve()))


def describe(storage: Any) -> str:
    """Where results go, for the log and the report: a block by its name, else its base path."""
    name = getattr(storage, "_block_document_name", None)
    if name:
        return f"{storage.get_block_type_slug()}/{name}"
    return str(getattr(storage, "basepath", None) or type(storage).__name__)


def use_for_night(settings: Settings) -> str:
    """Point the running flow's result store (and so every task and subflow of the night) at the configured
    storage; return where that is. Call it first thing in the flow, before any task runs."""
    from prefect.context import FlowRunContext

    storage = configured(settings)
    context = FlowRunContext.get()
    if context is None or context.result_store is None:
        raise RuntimeError("use_for_night runs inside the night's flow run")
    context.result_store = context.result_store.model_copy(update={"result_storage": storage})
    return describe(storage)


def _check_protocol(spec: str) -> None:
    import fsspec

    protocol = spec.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as exc:
        raise ConfigurationError(f"{VARIABLE}={spec}: fsspec cannot open {protocol}:// here ({exc}); install its "
                                 "package on every worker, or use a path or a saved filesystem block") from None


def _saved_block(slug: str) -> Any:
    from prefect.blocks.core import Block

    try:
        block = Block.load(slug)
    except (ValueError, KeyError) as exc:
        raise ConfigurationError(f"{VARIABLE}={slug}: no saved filesystem block of that name on this Prefect server "
                                 f"({exc}); save one, or use a path or an fsspec URL") from None
    if not hasattr(block, "write_path") or not hasattr(block, "read_path"):
        raise ConfigurationError(f"{VARIABLE}={slug}: the block is a {type(block).__name__}, not a filesystem that "
                                 "can be written (local-file-system, remote-file-system, s3-bucket, gcs-bucket, …)")
    return block
