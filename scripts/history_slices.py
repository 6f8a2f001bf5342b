"""Record the history each real-application eval case needs, so suspect commits are measured offline.

    python scripts/history_slices.py --mirror https://github.com/lobsters/lobsters=/path/to/lobsters.git \
        --mirror https://github.com/healthchecks/healthchecks=/path/to/healthchecks.git ...

For every case under evals/ whose `source.repository` has a mirror (a clone, bare is fine):

- `history.bundle`: the history of the case's vendored files (repo/, LICENSE included) up to `source.commit`, every
  commit that touched them and nothing else (`git fast-export` limited to those paths), as branch `main`. Commit
  messages gain an `Original-Commit: <sha>` trailer, so a slice commit names the real one.
- `introduced_by` in expected.yml: the ground truth. The lines the real fix removed or changed (for a fix that only
  adds, the line it inserts after), blamed at the parent in the full history; the commit most of them name (ties: the
  newest). Test files, and files the case does not carry, are left out.
- `blamed_by`: every commit that blame names for those lines, most lines first (SZZ's bug-introducing candidates: a fix
  that changes lines from several commits has several). `introduced_by` is its first.

`--truth-only` writes the two fields and leaves the bundles as they are.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EVALS = ROOT / "evals"
HUNK = re.compile(r"^@@ -(?P<start>\d+)(?:,(?P<count>\d+))? \+")
TRAILER = b"Original-Commit: "


def git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace')[:500]}")
    return proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", action="append", default=[], help="REPOSITORY_URL=PATH of a clone")
    parser.add_argument("--case", action="append", default=[], help="only these cases")
    parser.add_argument("--truth-only", action="store_true", help="write introduced_by and blamed_by, not the bundles")
    args = parser.parse_args()
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    with tempfile.TemporaryDirectory(prefix="nightwatch-slices-") as tmp:
        clones: dict[str, Path] = {}
        for folder in sorted(EVALS.iterdir()):
            expected = folder / "expected.yml"
            if not expected.is_file() or (args.case and folder.name not in args.case):
                continue
            case = yaml.safe_load(expected.read_text(encoding="utf-8"))
            url = case["source"].get("repository", "")
            if url not in mirrors:
                continue
            if url not in clones:  # a bare copy we may write refs to
                clones[url] = Path(tmp) / f"{len(clones)}.git"
                subprocess.run(["git", "clone", "-q", "--bare", mirrors[url], str(clones[url])], check=True)
            vendored = {str(f.relative_to(folder / "repo")) for f in (folder / "repo").rglob("*") if f.is_file()}
            blamed = blamed_commits(clones[url], case["source"]["commit"], case["source"]["fix_commit"], vendored)
            culprit = blamed[0] if blamed else ""
            history = "bundle kept" if args.truth_only else \
                f"{write_slice(clones[url], folder, case['source']['commit'])} commit(s) of history"
            set_field(expected, "introduced_by", culprit)
            set_field(expected, "blamed_by", "[" + ", ".join(blamed) + "]")  # [] when blame named none: a list, never null
            print(f"{folder.name}: {history}; introduced by {culprit[:12] if culprit else 'unknown'}"
                  f" of {len(blamed)} blamed")
    return 0


def blamed_commits(git_dir: Path, parent: str, fix: str, vendored: set[str]) -> list[str]:
    """The commits that last changed the lines the fix removed or changed, at the parent, in the code the case carries
    (a fix's edits to files the night never reads name no culprit it could find): most lines first, ties newest
    first."""
    votes: Counter[str] = Counter()
    when: dict[str, int] = {}
    for path, lines in removed_lines(git_dir, parent, fix).items():
        if path not in vendored:
            continue
        ranges = [a for n in sorted(lines) for a in ("-L", f"{n},{n}")]
        text = git(git_dir, "blame", "--porcelain", "-w", *ranges, parent, "--", path).decode(errors="replace")
        sha = ""
        for line in text.splitlines():
            if re.match(r"^[0-9a-f]{40} \d+ \d+", line):
                sha = line[:40]
                votes[sha] += 1
            elif line.startswith("committer-time ") and sha:
                when[sha] = int(line.split()[1])
    return sorted(votes, key=lambda s: (votes[s], when.get(s, 0)), reverse=True)


def removed_lines(git_dir: Path, parent: str, fix: str) -> dict[str, set[int]]:
    diff = git(git_dir, "diff", "-U0", "--no-color", "-M", parent, fix).decode(errors="replace")
    out: dict[str, set[int]] = {}
    path = ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else ""
        elif (hunk := HUNK.match(line)) and path and not _is_test(path):
            start, count = int(hunk["start"]), int(hunk["count"] if hunk["count"] is not None else 1)
            lines = set(range(start, start + count)) if count else {max(start, 1)}
            out.setdefault(path, set()).update(lines)
    return out


def _is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith(("test/", "tests/", "spec/")) or "/tests/" in path or name.startswith("test_") \
        or name.endswith(("_test.py", "_spec.rb", "_test.rb"))


def write_slice(git_dir: Path, folder: Path, parent: str) -> int:
    files = sorted(str(p.relative_to(folder / "repo")) for p in (folder / "repo").rglob("*") if p.is_file())
    git(git_dir, "update-ref", "refs/heads/main", parent)
    stream = git(git_dir, "fast-export", "--show-original-ids", "--signed-tags=strip", "--tag-of-filtered-object=drop",
                 "--full-history", "--simplify-merges", "refs/heads/main", "--", "--", *files)
    marked, commits = with_original_commits(stream)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "slice.git"
        subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
        git(target, "fast-import", "--quiet", data=marked)
        bundle = folder / "history.bundle"
        bundle.unlink(missing_ok=True)
        git(target, "bundle", "create", str(bundle), "refs/heads/main")
    return commits


def with_original_commits(stream: bytes) -> tuple[bytes, int]:
    """The fast-export stream with each commit message ending in an `Original-Commit:` trailer."""
    out, pos, kind, original, commits = [], 0, b"", b"", 0
    while pos < len(stream):
        end = stream.index(b"\n", pos) + 1
        line = stream[pos:end]
        pos = end
        if line.startswith(b"data "):
            size = int(line[5:].strip())
            body = stream[pos:pos + size]
            pos += size
            if kind == b"commit" and original:
                body = body.rstrip(b"\n") + b"\n\n" + TRAILER + original + b"\n"
                commits += 1
            out.append(b"data %d\n" % len(body) + body)
            continue
        word = line.split(b" ", 1)[0].strip()
        if word in (b"commit", b"blob", b"tag", b"reset"):
            kind, original = word, b""
        elif word == b"original-oid":
            original = line.split(b" ", 1)[1].strip()
            continue  # fast-import needs no original ids
        out.append(line)
    return b"".join(out), commits


def set_field(path: Path, key: str, value: str) -> None:
    """`key: value` in expected.yml, before `notes:` (replaced when present); the rest of the file as written."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith(f"{key}:")]
    at = next((i for i, line in enumerate(lines) if line.startswith("notes:")), len(lines))
    lines.insert(at, f"{key}: {value or 'null'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
