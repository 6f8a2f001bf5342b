"""Build the ctfd-* evaluation cases under evals/ from real CTFd bug-fix commits.

    python scripts/python_evals/ctfd.py --git-dir /work/.mirror/CTFd+CTFd/repo [--only SLUG] [--keep]

For each case: the fix's parent is deployed at a real production path (the tree at `root`, its venv at `venv`),
its own pinned requirements.txt and the New Relic agent are installed there from PyPI, CTFd is created with its
defaults (SQLite database and filesystem cache inside the tree), and the case's steps (first-run setup, sign-ins,
the requests that hit the bug) run through CTFd's WSGI application under the real agent in developer mode
(`ctfd_drive.py`). The error payloads the agent wrote to its audit log become the case's export.json
(`nightwatch.sources.agent_capture.export_of`); expected.yml is written beside it, and the case's slice of
evals/apps/ctfd/history.bundle (the history of the files the night needs, up to the parent, with the LICENSE). The deployment folders are removed afterwards. Needs root (the paths).

With --sentry the same steps run under today's sentry-sdk instead of the agent, and every event it sent is written,
verbatim, as the case's sentry_events.json (`sentry_events.py`); the rest of the case is left as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from capture_newrelic_python import AGENT, INI, make_environment, read_audit_log  # noqa: E402
from history_slices import write_slice  # noqa: E402
from python_evals import sentry_events  # noqa: E402
from python_evals.common import expected_yml  # noqa: E402

from nightwatch.sources.agent_capture import export_of  # noqa: E402

EVALS = ROOT / "evals"
WORK = Path("/tmp/nightwatch-ctfd-capture")
APP_NAME = "ctfd-production"
ACCOUNT_ID = 2718281
REPOSITORY = "https://github.com/CTFd/CTFd"
ADMIN = {"name": "admin", "email": "admin@ctf.example.org", "password": "correct-horse-battery"}


def setup(user_mode: str = "users") -> list[dict]:
    """CTFd's first-run setup form, posted by the organiser, then the organiser's sign-in."""
    form = {"ctf_name": "Example CTF", "ctf_description": "Our yearly CTF", "user_mode": user_mode,
            "ctf_theme": "core", **ADMIN}
    return [{"op": "setup", "as": "admin", "form": form},
            {"op": "login", "as": "admin", "form": {"name": ADMIN["name"], "password": ADMIN["password"]}}]


def register(who: str) -> dict:
    return {"op": "register", "as": who,
            "form": {"name": who, "email": f"{who}@players.example.net", "password": f"{who}-password"}}


CHALLENGE = {"name": "warmup", "category": "misc", "description": "nc warmup.ctf.example.org 1337", "value": 100,
             "state": "visible", "type": "standard"}

CASES = [
    {
        "slug": "users-create-admin-email",
        "title": "An admin creating a user with the admin's own email address gets a 500: IntegrityError on commit",
        "parent": "df355b7992055149caf5503fdce32046d359552f",
        "fix": "9d9c891191a26e548bb70bb74f6f7869ed3e7f11",
        "root": "/opt/CTFd", "venv": "/opt/venv",
        "steps": [*setup(), register("alice"),
                  {"as": "admin", "method": "POST", "path": "/api/v1/users", "times": 2,
                   "json": {"name": "bob", "email": "bob@players.example.net", "password": "bob-password"}},
                  {"as": "admin", "method": "POST", "path": "/api/v1/users", "times": 3,
                   "json": {"name": "carol", "email": ADMIN["email"], "password": "carol-password"}},
                  {"as": "admin", "method": "POST", "path": "/api/v1/users", "times": 1,
                   "json": {"name": "alice", "email": "alice2@players.example.net", "password": "x-password"}}],
        "error": ["sqlalchemy.exc:IntegrityError", None],
        "crash": ["CTFd/api/v1/users.py", None],
        "origin": ["CTFd/schemas/users.py", [109, 129]],
        "alternatives": [["CTFd/schemas/users.py", [62, 87]]],
        "keywords": ["email", "current_user", "admin", "validate_email"],
        "test": "tests/api/v1/test_users.py::test_api_users_post_admin_duplicate_admin_email",
        "files": ["CTFd/api/v1/users.py", "CTFd/schemas/users.py", "CTFd/models/__init__.py",
                  "CTFd/utils/user/__init__.py"],
        "notes": "POST /api/v1/users (an admin creating an account) loads the body with UserSchema('admin'), whose "
                 "pre_load validators reject a name or email already taken, except when the existing user is the "
                 "current user: that exception is meant for a user editing their own profile, but on create the "
                 "current user is the admin, so an admin creating a user with the admin's own email (or name) passes "
                 "validation and the INSERT violates the unique constraint at db.session.commit() in UserList.post "
                 "(sqlite3.IntegrityError, raised as sqlalchemy.exc.IntegrityError). The real fix, in "
                 "CTFd/schemas/users.py (away from the crash), drops the current-user exception on create and only "
                 "exempts the user being edited (data id or the schema's instance).",
    },
    {
        "slug": "user-without-team-place",
        "title": "In teams mode, GET /api/v1/users/<id> of a user who has not joined a team raises AttributeError",
        "parent": "f4d915ee253f38dd90326009d2f5f95bb9f505ba",
        "fix": "cf7b565851aae693db8bc7ff4631e25d8a384d67",
        "root": "/srv/ctfd", "venv": "/srv/ctfd/venv",
        "steps": [*setup("teams"), register("alice"), register("bob"),
                  {"as": "bob", "method": "POST", "path": "/teams/new", "page": "/teams/new",
                   "form": {"name": "rooted", "password": "team-password"}},
                  {"as": "carol", "method": "GET", "path": "/api/v1/users/3", "times": 2},
                  {"as": "carol", "method": "GET", "path": "/api/v1/users/2", "times": 4},
                  {"op": "harvest"},
                  {"as": "admin", "method": "GET", "path": "/api/v1/users/2", "times": 1}],
        "error": ["builtins:AttributeError", None],
        "crash": ["CTFd/utils/user/__init__.py", None],
        "origin": ["CTFd/utils/user/__init__.py", [63, 71]],
        "alternatives": [["CTFd/api/v1/users.py", [205, 218]]],
        "keywords": ["team", "account", "None", "place"],
        "test": None,
        "files": ["CTFd/api/v1/users.py", "CTFd/utils/user/__init__.py", "CTFd/models/__init__.py"],
        "notes": "In teams mode a user's account is their team (Users.account returns self.team), so a user who "
                 "registered but has not created or joined a team yet has account None. GET /api/v1/users/<id> "
                 "builds the public profile with get_user_public_api, which (scores visible) asks get_user_place "
                 "and get_user_score, and both dereference user.account.place / .score. The real fix guards both "
                 "helpers with `if user and user.account:` (lines 63 and 71), just above the crash.",
    },
    {
        "slug": "duplicate-solution",
        "title": "Posting a second solution for a challenge raises IntegrityError in POST /api/v1/solutions",
        "parent": "34df42456efc4dd9d52095de6a12cbdca88f1878",
        "fix": "d307f20d546aaef10d3c2606a939f229c97a875f",
        "root": "/var/www/CTFd", "venv": "/var/www/CTFd/.venv",
        "steps": [*setup(), {"as": "admin", "method": "POST", "path": "/api/v1/challenges", "json": CHALLENGE},
                  {"as": "admin", "method": "POST", "path": "/api/v1/solutions",
                   "json": {"challenge_id": 1, "content": "Connect with nc and send `cat flag`.", "state": "hidden"}},
                  {"as": "admin", "method": "POST", "path": "/api/v1/solutions", "times": 3,
                   "json": {"challenge_id": 1, "content": "Updated writeup: nc, then `cat flag`.", "state": "visible"}}],
        "error": ["sqlalchemy.exc:IntegrityError", None],
        "crash": ["CTFd/api/v1/solutions.py", None],
        "origin": ["CTFd/api/v1/solutions.py", [126, 126]],
        "alternatives": [["CTFd/api/v1/solutions.py", [114, 126]]],
        "keywords": ["solution", "unique", "challenge_id", "already exists"],
        "test": "tests/api/v1/test_solutions.py::test_api_solutions_post_admin_duplicate_challenge_solution",
        "files": ["CTFd/api/v1/solutions.py", "CTFd/models/__init__.py", "CTFd/schemas/solutions.py"],
        "notes": "A challenge has at most one solution (solutions.challenge_id is unique). POST /api/v1/solutions "
                 "adds the new Solutions row and commits without checking, so an admin posting a solution for a "
                 "challenge that already has one gets a 500: the INSERT violates the unique constraint at "
                 "db.session.commit(). The real fix catches IntegrityError around that commit, rolls back and "
                 "answers 400 'A solution for this challenge already exists'; checking for an existing solution "
                 "before adding would be equally accepted.",
    },
    {
        "slug": "page-preview-invalid",
        "title": "Previewing a page whose content fails validation raises AttributeError: 'dict' object has no attribute 'html'",
        "parent": "b5f0cf2b7f0e29f72c9227ea9bc08024230b4f06",
        "fix": "de2b27195940609820dc64f8b280bd856fc978fc",
        "root": "/home/ctfd/CTFd", "venv": "/home/ctfd/venv", "home": "/home/ctfd",
        "steps": [*setup(), {"op": "page", "as": "admin", "path": "/admin/pages/new"},
                  {"as": "admin", "method": "POST", "path": "/admin/pages/preview", "times": 2, "nonce": True,
                   "form": {"content": "# Rules\n\nNo attacking the scoreboard.", "format": "markdown"}},
                  {"as": "admin", "method": "POST", "path": "/admin/pages/preview", "times": 3, "nonce": True,
                   "form": {"content": "# Rules\n\n" + "Flags look like flag{...}. " * 2700, "format": "markdown"}}],
        "error": ["builtins:AttributeError", None],
        "crash": ["CTFd/admin/pages.py", None],
        "origin": ["CTFd/admin/pages.py", [26, 34]],
        "alternatives": [],
        "keywords": ["marshmallow", "dict", "validation", "errors", "load"],
        "test": None,
        "files": ["CTFd/admin/pages.py", "CTFd/schemas/pages.py", "CTFd/models/__init__.py"],
        "notes": "The page editor's preview (POST /admin/pages/preview) loads the posted content and format with "
                 "PageSchema and renders page.data.html. With marshmallow 2 a load that fails validation does not "
                 "raise: it returns (data, errors) with data a plain dict, so content over the schema's 65535 "
                 "characters (a long rules page) makes page.data a dict and .html raises AttributeError. The real "
                 "fix stops going through the schema: it renders the content with build_markdown/build_html by "
                 "format, in the same view.",
    },
    {
        "slug": "delete-solution-with-files",
        "title": "Deleting a solution that has an attached file fails with IntegrityError (FOREIGN KEY constraint failed)",
        "parent": "8a89bdef84ceff671f751b93cc43d161b29f7371",
        "fix": "fc7886d380d2ee04987bab9741cd0b9fd50a69ea",
        "root": "/opt/CTFd", "venv": "/opt/venv",
        "steps": [*setup(), {"as": "admin", "method": "POST", "path": "/api/v1/challenges", "json": CHALLENGE},
                  {"as": "admin", "method": "POST", "path": "/api/v1/solutions",
                   "json": {"challenge_id": 1, "content": "See the attached screenshot.", "state": "visible"}},
                  {"op": "page", "as": "admin", "path": "/admin/challenges/1"},
                  {"as": "admin", "method": "POST", "path": "/api/v1/files",
                   "form": {"type": "solution", "solution_id": "1"}, "files": {"file": ["solve.png", "PNG..."]}},
                  {"as": "admin", "method": "DELETE", "path": "/api/v1/solutions/1", "times": 2, "json": {}}],
        "error": ["sqlalchemy.exc:IntegrityError", None],
        "crash": ["CTFd/api/v1/solutions.py", None],
        "origin": ["CTFd/models/__init__.py", [375, 375]],
        "alternatives": [["CTFd/api/v1/solutions.py", [241, 246]]],
        "keywords": ["SolutionFiles", "foreign key", "cascade", "solution_id"],
        "test": "tests/api/v1/test_solutions.py::test_api_solutions_delete_admin_with_files_and_unlocks",
        "files": ["CTFd/api/v1/solutions.py", "CTFd/models/__init__.py", "CTFd/api/v1/files.py"],
        "notes": "Solution files (SolutionFiles, the polymorphic 'solution' rows of the files table) reference "
                 "solutions.id through a foreign key declared without ON DELETE CASCADE, and the Solutions model has "
                 "no relationship that would delete them. DELETE /api/v1/solutions/<id> deletes the solution and "
                 "commits, so once a file is attached to the solution the DELETE violates the foreign key (CTFd turns "
                 "SQLite's foreign_keys pragma on) and the commit raises IntegrityError. The real fix declares the "
                 "key with ondelete='CASCADE' in CTFd/models/__init__.py (with a migration), away from the crash, "
                 "and also deletes the solution's files and unlocks in Solution.delete before the commit.",
    },
]


def git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True).stdout


def export_tree(git_dir: str, commit: str, root: Path) -> None:
    """The commit's files under root. The mirror lacks some large blobs (built JavaScript bundles): those are
    skipped, CTFd's server side needs none of them."""
    entries = [line.split(b"\t", 1) for line in git(git_dir, "ls-tree", "-r", "-z", commit).split(b"\0") if line]
    blobs = [(meta.split()[2].decode(), path.decode(), meta.split()[0]) for meta, path in entries
             if meta.split()[1] == b"blob"]
    batch = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    for sha, path, mode in blobs:
        batch.stdin.write(sha.encode() + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if header[1] == b"missing":
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":
            target.symlink_to(data.decode())
            continue
        target.write_bytes(data)
        if mode == b"100755":
            target.chmod(0o755)
    batch.stdin.close()
    batch.wait()


def deploy(git_dir: str, case: dict, sentry: bool = False) -> Path:
    """The parent's tree at the production path, with its venv (requirements.txt + the agent, or sentry-sdk) where
    it really lives."""
    root, venv = Path(case["root"]), Path(case["venv"])
    for path in (root, venv):
        if path.exists():
            shutil.rmtree(path)
    root.mkdir(parents=True)
    export_tree(git_dir, case["parent"], root)
    if sentry:
        return sentry_events.environment(venv, root / "requirements.txt", "ctfd_drive.py", "flask")
    python = make_environment(AGENT, venv, ["-r", str(root / "requirements.txt")])
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for name in ("ctfd_drive.py", "monitors.py"):
        shutil.copy(Path(__file__).with_name(name), Path(site) / "capture_server" / name)
    return python


def capture(python: Path, case: dict) -> dict:
    WORK.mkdir(parents=True, exist_ok=True)
    audit, log, ini = (WORK / f"{case['slug']}.{ext}" for ext in ("audit.log", "agent.log", "ini"))
    audit.unlink(missing_ok=True)
    ini.write_text(INI.format(app_name=APP_NAME, audit=audit, log=log), encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEW_RELIC_", "NIGHTWATCH_", "ANTHROPIC_", "DATABASE_", "REDIS_", "SECRET_KEY"))}
    spec = {"steps": case["steps"]}
    proc = subprocess.run([str(python), "-m", "capture_server.ctfd_drive", case["root"], str(ini), json.dumps(spec)],
                          capture_output=True, text=True, env=env, cwd=case["root"], timeout=900)
    print(proc.stdout, end="")
    if proc.returncode != 0:
        raise SystemExit(f"{case['slug']}: the driver failed:\n{proc.stderr[-4000:]}")
    return read_audit_log(audit)


def capture_sentry(python: Path, case: dict) -> Path:
    """The case's steps under sentry-sdk; every event it sent, checked for the case's error, as sentry_events.json."""
    requests, events = sentry_events.run(python, "capture_server.ctfd_drive", case, {"steps": case["steps"]}, WORK,
                                         "ctfd-web-1", drop=("DATABASE_", "REDIS_", "SECRET_KEY"))
    sentry_events.check(events, case, case["error"][0], tuple(case["crash"]))
    return sentry_events.write(EVALS / f"ctfd-{case['slug']}", python, case, requests, events,
                               ("flask", "werkzeug", "sqlalchemy"))


def trace_frames(trace: list[str]) -> list[tuple[str, int]]:
    frames = []
    for line in trace:
        found = re.match(r'\s*File "([^"]+)", line (\d+)', line)
        if found:
            frames.append((found.group(1), int(found.group(2))))
    return frames


def the_error(export: dict, case: dict) -> dict:
    """The case's error group: its class, and its transaction (None in the case: the one the agent named)."""
    error_class, transaction = case["error"]
    for detail in export["details"]:
        if detail["error_class"] == error_class and transaction in (None, detail["transaction"]):
            return detail
    raise SystemExit(f"{case['slug']}: no {case['error']} captured; got "
                     f"{[(d['error_class'], d['transaction']) for d in export['details']]}")


def first_app_frame(detail: dict, case: dict) -> tuple[str, int]:
    """The deepest frame of the deployed tree (not the venv) in the error's trace, repository-relative."""
    root, venv = case["root"].rstrip("/") + "/", case["venv"].rstrip("/") + "/"
    traces = detail["error_traces"]["data"]["actor"]["account"]["nrql"]["results"]
    if not traces:
        raise SystemExit(f"{case['slug']}: the error has no trace")
    for path, line in reversed(trace_frames(traces[0]["stackTrace"])):
        if path.startswith(root) and not path.startswith(venv):
            return path[len(root):], line
    raise SystemExit(f"{case['slug']}: no frame of {root} in the trace")


def changed_lines(git_dir: str, case: dict, path: str) -> set[int]:
    """Lines of `path` (parent numbering) the fix deleted or changed, and the lines around its pure insertions."""
    diff = git(git_dir, "diff", "-U0", case["parent"], case["fix"], "--", path).decode()
    lines: set[int] = set()
    for start, count in re.findall(r"^@@ -(\d+)(?:,(\d+))? ", diff, flags=re.M):
        start, count = int(start), 1 if count == "" else int(count)
        lines.update(range(start, start + count) if count else (start, start + 1))
    return lines


def write_case(git_dir: str, case: dict, payloads: dict, python: Path) -> Path:
    export = export_of(payloads, APP_NAME, account_id=ACCOUNT_ID)
    detail = the_error(export, case)
    crash = first_app_frame(detail, case)
    if crash[0] != case["crash"][0] or case["crash"][1] not in (None, crash[1]):
        raise SystemExit(f"{case['slug']}: the trace's first in-app frame is {crash}, the case says {case['crash']}")
    origin_file, (start, end) = case["origin"]
    if not changed_lines(git_dir, case, origin_file) & set(range(start, end + 1)):
        raise SystemExit(f"{case['slug']}: the fix changed none of {origin_file}:{start}-{end}")
    facets = {(d["error_class"], d["transaction"]) for d in export["details"]}
    for noise in case.get("noise", []):
        if tuple(noise) not in facets:
            raise SystemExit(f"{case['slug']}: noise row {noise} not captured; got {sorted(facets)}")
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True)
    versions = {p["name"].lower(): p["version"] for p in json.loads(listed.stdout or "[]")} if listed.returncode == 0 else {}
    export["captured"] = {"versions": {k: versions[k] for k in ("newrelic", "flask", "werkzeug", "sqlalchemy")
                                       if k in versions},
                          "requests": [f"{s['method']} {s['path']} x{s.get('times', 1)}" for s in case["steps"]
                                       if "method" in s],
                          "deployed_at": case["root"], "venv": case["venv"]}
    folder = EVALS / f"ctfd-{case['slug']}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "export.json").write_text(json.dumps(export, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    error = (detail["error_class"], detail["transaction"])
    (folder / "expected.yml").write_text(expected_yml(f"ctfd-{case['slug']}", (REPOSITORY, "Apache-2.0"), case, error, crash, folder / "expected.yml"), encoding="utf-8")
    root = case["root"].rstrip("/") + "/"
    in_trace = {p[len(root):] for t in detail["error_traces"]["data"]["actor"]["account"]["nrql"]["results"]
                for p, _ in trace_frames(t["stackTrace"])
                if p.startswith(root) and not p.startswith(case["venv"].rstrip("/") + "/")}
    wanted = {"LICENSE", crash[0], origin_file, *(a[0] for a in case["alternatives"]), *case["files"], *in_trace}
    write_slice(Path(git_dir), "ctfd", folder.name, case["parent"], wanted)  # the case's code: its files' history
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help="a clone (bare is fine) of github.com/CTFd/CTFd")
    parser.add_argument("--only", action="append", help="a case slug (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the deployment folders (for debugging)")
    parser.add_argument("--sentry", action="store_true", help="capture under sentry-sdk into sentry_events.json")
    args = parser.parse_args()
    for case in CASES:
        if args.only and case["slug"] not in args.only:
            continue
        python = deploy(args.git_dir, case, sentry=args.sentry)
        try:
            if args.sentry:
                print(f"{case['slug']}: -> {capture_sentry(python, case)}")
                continue
            payloads = capture(python, case)
            folder = write_case(args.git_dir, case, payloads, python)
            print(f"{case['slug']}: {sum(len(p[1]) for p in payloads['error_data'])} error traces -> {folder}")
        finally:
            if not args.keep:
                for path in (case["root"], case["venv"], case.get("home", case["root"])):
                    shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
