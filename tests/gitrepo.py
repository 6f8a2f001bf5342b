"""Test repositories are git checkouts, as NightWatch requires: the code host serves only what git tracks."""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_all(root: Path, message: str = "test repository") -> Path:
    """`git init` the folder (if needed) and commit everything in it; returns the folder."""
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=tests@example.com", "-c", "user.name=tests",
                    "commit", "-qm", message, "--allow-empty"], check=True)
    return root
