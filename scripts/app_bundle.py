"""Write an application's one bundle (evals/apps/<app>/history.bundle) from a repository holding the refs a script
made, keeping the bundle's other refs: the case slices (scripts/history_slices.py) and the fix commits' trees
(scripts/fix_trees.py) share it, and each script replaces only its own."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path


def bundle_refs(bundle: Path) -> dict[str, str]:
    """ref -> sha of a bundle's heads ({} where there is no bundle)."""
    if not bundle.is_file():
        return {}
    out = subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True, check=True).stdout
    return {ref: sha for sha, ref in (line.split() for line in out.splitlines() if line.strip())}


def write_app_bundle(bundle: Path, work: Path, ours: Callable[[str], bool]) -> None:
    """`bundle` again from every ref of `work` (a bare repository) and every ref of the old bundle that `ours` does not
    claim; packed as tightly as git packs (the slices of one application share most of their blobs)."""
    kept = [ref for ref in bundle_refs(bundle) if not ours(ref)]
    if kept:
        subprocess.run(["git", f"--git-dir={work}", "fetch", "-q", "--no-tags", str(bundle.resolve()),
                        *(f"{ref}:{ref}" for ref in kept)], check=True, capture_output=True)
    subprocess.run(["git", f"--git-dir={work}", "repack", "-q", "-a", "-d", "-f", "--window=250", "--depth=50"],
                   check=True, capture_output=True)
    bundle.parent.mkdir(parents=True, exist_ok=True)
    partial = bundle.with_name(bundle.name + ".new")
    subprocess.run(["git", f"--git-dir={work}", "bundle", "create", "-q", str(partial), "--all"], check=True,
                   capture_output=True)
    partial.replace(bundle)
