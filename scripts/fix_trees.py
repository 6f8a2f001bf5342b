"""Write the trees `nightwatch eval --fix-tests` runs a real fix commit's own regression test on, into the
application's one bundle (evals/apps/<app>/history.bundle, its case slices kept), so the check needs no clone of the
application (CI reaches package registries, not GitHub mirrors).

    python scripts/fix_trees.py --mirror https://github.com/healthchecks/healthchecks=/path/to/healthchecks.git \
        --mirror https://github.com/CTFd/CTFd=/path/to/CTFd.git

For every case under evals/ with a `regression_test` and a `source.fix_commit`, and every harness-only fix commit in
`evals/apps/<app>/app.yml`'s `fix_commits:`, whose repository has a mirror (a clone, bare is fine), the application's
bundle holds two synthesized commits: `refs/cases/<id>/parent`, whose tree is the real tree of the
fix's parent (`source.commit`, or the entry's `parent`), and `refs/cases/<id>/fix`, whose tree is the real tree of
the fix and whose parent is the first. Each message ends in an `Original-Commit: <sha>` trailer naming the real commit. The paths
`app.yml` excludes (built assets, images: what the tests do not read) are left out of both trees; its
`keep` patterns win over `exclude`. Patterns are fnmatch globs over the whole path (`*` crosses folders). One bundle per
application stores a blob the cases share once. The commits carry the real authors and dates, so writing the bundles
again from the same mirrors and yml gives the same commits.

`--check` writes nothing: it says whether each bundle's refs still match the mirrors and the yml.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nightwatch.eval_apps import TRAILER, AppTrees, bundle_of, excluded, load_app_trees  # noqa: E402 - the project's own
from nightwatch.evaluation import FixTestItem, fix_test_items, load_cases  # noqa: E402
from scripts.app_bundle import bundle_refs, write_app_bundle  # noqa: E402

EVALS = ROOT / "evals"
COMMITTER = {"GIT_COMMITTER_NAME": "NightWatch fix trees", "GIT_COMMITTER_EMAIL": "fix-trees@nightwatch.invalid"}


def git(git_dir: Path, *args: str, data: bytes | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data, capture_output=True, check=False,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace')[:500]}")
    return proc.stdout.decode(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", action="append", default=[], required=True, help="REPOSITORY_URL=PATH of a clone")
    parser.add_argument("--cases-dir", type=Path, default=EVALS)
    parser.add_argument("--check", action="store_true", help="only say whether the bundles match the mirrors")
    args = parser.parse_args()
    mirrors = {url.rstrip("/"): Path(path) for url, path in (m.split("=", 1) for m in args.mirror)}
    apps_dir = args.cases_dir / "apps"
    by_app: dict[str, list[FixTestItem]] = {}
    for item in fix_test_items(load_cases(args.cases_dir), apps_dir):
        if item.repository.rstrip("/") in mirrors:
            by_app.setdefault(item.app, []).append(item)
    if not by_app:
        raise SystemExit("no case with a regression_test and a fix_commit, and no fix_commits entry, has a --mirror")
    stale = 0
    for app, items in sorted(by_app.items()):
        mirror = mirrors[items[0].repository.rstrip("/")]
        trees = load_app_trees(apps_dir, app)
        with tempfile.TemporaryDirectory(prefix="nightwatch-fix-trees-") as tmp:
            work = Path(tmp) / f"{app}.git"
            refs = synthesize(mirror, work, items, trees)
            bundle = bundle_of(apps_dir, app)
            if args.check:
                have = {ref: sha for ref, sha in bundle_refs(bundle).items() if is_fix_tree(ref)}
                wrong = sorted(r for r in refs if have.get(r) != refs[r]) + sorted(set(have) - set(refs))
                stale += bool(wrong)
                print(f"{bundle}: " + (f"stale ({', '.join(wrong)})" if wrong else "up to date"))
                continue
            write_app_bundle(bundle, work, is_fix_tree)
            kinds = f"{sum(i.kind == 'eval' for i in items)} eval case(s), {sum(i.kind == 'harness' for i in items)} harness-only"
            print(f"{bundle}: {kinds}, {bundle.stat().st_size / 1e6:.2f} MB")
    return 1 if stale else 0


def synthesize(mirror: Path, work: Path, items: list[FixTestItem], trees: AppTrees) -> dict[str, str]:
    """A bare repository at `work` borrowing the mirror's objects, with each fix commit's two commits under its refs."""
    subprocess.run(["git", "init", "-q", "--bare", str(work)], check=True)
    objects = Path(git(mirror, "rev-parse", "--absolute-git-dir").strip()) / "objects"
    (work / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    refs: dict[str, str] = {}
    for item in items:
        parent, fix = item.parent, item.fix
        parent_commit = commit(work, parent, filtered_tree(work, parent, trees), [],
                               f"{item.id}: the code before the fix {fix[:12]}")
        fix_commit = commit(work, fix, filtered_tree(work, fix, trees), [parent_commit], "")
        for name, sha in (("parent", parent_commit), ("fix", fix_commit)):
            ref = f"refs/cases/{item.id}/{name}"
            git(work, "update-ref", ref, sha)
            refs[ref] = sha
    return refs


def filtered_tree(work: Path, commit_sha: str, trees: AppTrees) -> str:
    """The tree of `commit_sha` without the paths the app's yml excludes."""
    listing = git(work, "ls-tree", "-r", "-z", "--full-tree", commit_sha)
    kept = [entry for entry in listing.split("\0") if entry and not excluded(entry.split("\t", 1)[1], trees)]
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(work, "read-tree", "--empty", env=env)
        # update-index reads ls-tree's own lines: "<mode> <type> <object>\t<path>"
        git(work, "update-index", "-z", "--index-info", data="".join(f"{e}\0" for e in kept).encode(), env=env)
        return git(work, "write-tree", env=env).strip()


def commit(work: Path, original: str, tree: str, parents: list[str], subject: str) -> str:
    """A commit of `tree` with the original commit's author and dates, its subject (or `subject`) and a trailer."""
    fields = git(work, "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cI%x00%s", original).rstrip("\n").split("\0")
    name, email, authored, committed, original_subject = fields
    message = f"{subject or original_subject}\n\n{TRAILER}{original}\n"
    env = {**COMMITTER, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": authored,
           "GIT_COMMITTER_DATE": committed}
    return git(work, "commit-tree", tree, *(a for p in parents for a in ("-p", p)), data=message.encode(), env=env).strip()


def is_fix_tree(ref: str) -> bool:
    """A ref this script writes (a fix commit's parent or fix), not a case's history slice."""
    return ref.startswith("refs/cases/") and ref.rsplit("/", 1)[-1] in ("parent", "fix")


if __name__ == "__main__":
    sys.exit(main())
