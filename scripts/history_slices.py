"""Record the history each real-application eval case needs, so suspect commits are measured offline.

    python scripts/history_slices.py --mirror https://github.com/lobsters/lobsters=/path/to/lobsters.git \
        --mirror https://github.com/healthchecks/healthchecks=/path/to/healthchecks.git ...

For every case under evals/ whose `source.repository` has a mirror (a clone, bare is fine):

- `refs/cases/<id>/history` in the application's bundle (`evals/apps/<app>/history.bundle`, its other refs kept): the
  history of the files the case's night needs (LICENSE included) up to `source.commit`, every commit that touched them
  and nothing else (`git fast-export` limited to those paths). Commit messages gain an `Original-Commit: <sha>`
  trailer, so a slice commit names the real one. The files are the ones its slice holds now; a new case names them with
  `--case <id> --files <path> ...`, and the case builders (scripts/python_evals/, scripts/lobsters_evals/) write a
  new case's first slice themselves (`write_slice`).
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
sys.path.insert(0, str(ROOT))

from nightwatch.eval_apps import app_of, bundle_of, case_ref  # noqa: E402 - the project's own package, from a script
from scripts.app_bundle import write_app_bundle  # noqa: E402

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
    parser.add_argument("--files", nargs="+", help="a new case's files (with one --case): the paths its night needs, "
                                                   "repository-relative; LICENSE is added")
    args = parser.parse_args()
    if args.files and len(args.case) != 1:
        parser.error("--files names one case's files: give exactly one --case")
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    for folder in sorted(EVALS.iterdir()):
        expected = folder / "expected.yml"
        if not expected.is_file() or (args.case and folder.name not in args.case):
            continue
        case = yaml.safe_load(expected.read_text(encoding="utf-8"))
        url = case["source"].get("repository", "")
        if url not in mirrors:
            continue
        clone, app = Path(mirrors[url]), app_of(url)  # read only: the slice is made in a repository borrowing its objects
        files = {*args.files, "LICENSE"} if args.files else slice_files(bundle_of(EVALS / "apps", app), folder.name)
        blamed = blamed_commits(clone, case["source"]["commit"], case["source"]["fix_commit"], files)
        culprit = blamed[0] if blamed else ""
        history = "bundle kept" if args.truth_only else \
            f"{write_slice(clone, app, folder.name, case['source']['commit'], files)} commit(s) of history"
        set_field(expected, "introduced_by", culprit)
        set_field(expected, "blamed_by", "[" + ", ".join(blamed) + "]")  # [] when blame named none: a list, never null
        print(f"{folder.name}: {history}; introduced by {culprit[:12] if culprit else 'unknown'} of {len(blamed)} blamed")
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


def slice_files(bundle: Path, case_id: str) -> set[str]:
    """The files a case's slice holds now (its night's code)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "read.git"
        subprocess.run(["git", "init", "-q", "--bare", str(work)], check=True)
        ref = case_ref(case_id, "history")
        proc = subprocess.run(["git", f"--git-dir={work}", "fetch", "-q", str(bundle.resolve()), f"{ref}:{ref}"],
                              capture_output=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{bundle} has no {ref}: name a new case's files with --files (or let its builder write it)")
        return set(git(work, "ls-tree", "-r", "--name-only", ref).decode().splitlines())


def write_slice(git_dir: Path, app: str, case_id: str, parent: str, files: set[str]) -> int:
    """`refs/cases/<case_id>/history` in the app's bundle: the history of `files` up to `parent` (the real commit the
    case's night reads); the bundle's other refs are kept. Returns how many commits the slice has."""
    with tempfile.TemporaryDirectory() as tmp:  # a repository borrowing the clone's objects, so the clone's refs stay
        source = Path(tmp) / "source.git"
        subprocess.run(["git", "init", "-q", "--bare", str(source)], check=True)
        objects = Path(git(git_dir, "rev-parse", "--absolute-git-dir").decode().strip()) / "objects"
        (source / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        git(source, "update-ref", "refs/heads/main", parent)
        stream = git(source, "fast-export", "--show-original-ids", "--signed-tags=strip", "--tag-of-filtered-object=drop",
                     "--full-history", "--simplify-merges", "refs/heads/main", "--", "--", *sorted(files))
    marked, commits = with_original_commits(stream)
    ref = case_ref(case_id, "history")
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "slice.git"
        subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
        git(target, "fast-import", "--quiet", data=marked)
        git(target, "update-ref", ref, "refs/heads/main")
        git(target, "update-ref", "-d", "refs/heads/main")
        write_app_bundle(bundle_of(EVALS / "apps", app), target, lambda r: r == ref)
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
    """`key: value` in expected.yml, where it is (before `notes:` when new); the rest of the file as written."""
    lines = path.read_text(encoding="utf-8").splitlines()
    line = f"{key}: {value or 'null'}"
    at = next((i for i, text in enumerate(lines) if text.startswith(f"{key}:")), None)
    if at is not None:
        lines[at] = line
    else:
        lines.insert(next((i for i, text in enumerate(lines) if text.startswith("notes:")), len(lines)), line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
