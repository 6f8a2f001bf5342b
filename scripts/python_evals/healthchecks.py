"""Build the healthchecks-* evaluation cases under evals/ from real Healthchecks bug-fix commits.

    python scripts/python_evals/healthchecks.py --git-dir /work/.mirror/healthchecks+healthchecks/repo [--only SLUG]

For each case: the fix's parent is deployed at a real production path (the checkout at `root`, its venv at `venv`),
its own pinned requirements.txt and the New Relic agent are installed there from PyPI, the requests that hit the bug
run through Django's WSGI handler under the real agent in developer mode (`healthchecks_drive.py`), and the error
payloads the agent wrote to its audit log become the case's export.json (`nightwatch.sources.agent_capture.export_of`).
The case's expected.yml is written beside it, and its slice of the application's bundle (the history of the files the
night needs, up to the parent, with the LICENSE). The deployment folders are removed afterwards. Needs root (the deploy paths) and the package registry.

With --sentry the same requests run under today's sentry-sdk instead of the agent, and every event it sent is
written, verbatim, as the case's sentry_events.json (`sentry_events.py`); the rest of the case is left as it is.
"""

from __future__ import annotations

import argparse
import json
import os
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
WORK = Path("/tmp/nightwatch-healthchecks-capture")
APP_NAME = "healthchecks-production"
ACCOUNT_ID = 3141592
REPOSITORY = "https://github.com/healthchecks/healthchecks"
# Production settings a deployment sets (DEBUG off); no DB variable, so Healthchecks uses its SQLite default
ENV = {"DEBUG": "False", "SECRET_KEY": "a-production-secret-key-that-is-long-enough", "ALLOWED_HOSTS": "*",
       "DEFAULT_FROM_EMAIL": "healthchecks@example.org"}
SMTP = {"EMAIL_HOST": "localhost", "EMAIL_PORT": "1", "EMAIL_USE_TLS": "False"}
CLIENT_GONE = {"method": "POST", "path": "/ping/{check}/", "content_type": "text/plain", "client_gone": True,
               "session": False}

CASES = [
    {
        "slug": "login-email-username",
        "title": "Requesting a sign-in link for a user whose username is an email address raises NoReverseMatch",
        "parent": "455dc66ce2e92862924a936632f83de978db6118",
        "fix": "ea89237c16c5feee194f5b5256b79cfa7e44bba2",
        "root": "/srv/healthchecks", "venv": "/srv/healthchecks/venv", "env": SMTP,
        "setup": "login-email-username",
        "requests": [
            {"method": "POST", "path": "/accounts/login/", "body": "identity=bob%40example.org", "times": 2},
            {"method": "POST", "path": "/accounts/login/", "body": "identity=alice%40example.org", "times": 3},
        ],
        "error": ["django.urls.exceptions:NoReverseMatch", "WebTransaction/Function/hc.accounts.views:login"],
        "crash": ["hc/accounts/models.py", 131],
        "origin": ["hc/accounts/urls.py", [16, 16]],
        "alternatives": [["hc/accounts/models.py", [129, 133]]],
        "keywords": ["username", "slug", "check_token"],
        "test": "hc.accounts.tests.test_check_token.CheckTokenTestCase.test_it_handles_email_in_username",
        "files": ["hc/accounts/models.py", "hc/accounts/views.py", "hc/accounts/forms.py", "hc/accounts/urls.py",
                  "hc/urls.py", "hc/lib/emails.py"],
        "notes": "Healthchecks makes UUID-like usernames itself, but users created by another authentication backend "
                 "(django-auth-ldap, a remote-user header) can have an email address as username. Asking for a "
                 "sign-in link (POST /accounts/login/ with the email form) calls Profile.send_instant_login_link, "
                 "which reverses hc-check-token with the username; the URL pattern declared it "
                 "`<slug:username>`, so an username with '@' and '.' matches no pattern and reverse raises "
                 "NoReverseMatch. The real fix changes the pattern to `<str:username>` in hc/accounts/urls.py, away "
                 "from the crash; guarding send_instant_login_link would also be accepted.",
    },
    {
        "slug": "invite-without-smtp",
        "title": "Inviting a team member on a server without SMTP settings raises AssertionError in hc.lib.emails.send",
        "parent": "39a21861bac6d7c36348b08ab6365831ee7b3b46",
        "fix": "2b318cab84952202b99ae6460a437c3f92dd33ea",
        "root": "/app", "venv": "/app/.venv", "env": {},
        "setup": "invite-without-smtp",
        "requests": [
            {"method": "GET", "path": "/projects/{project}/settings/", "times": 2},
            {"method": "POST", "path": "/projects/{project}/settings/",
             "body": "invite_team_member=1&email=carol%40example.org&role=w", "times": 1},
            {"method": "POST", "path": "/projects/{project}/settings/",
             "body": "invite_team_member=1&email=dave%40example.org&role=r", "times": 1},
            {**CLIENT_GONE, "times": 2},
        ],
        "error": ["builtins:AssertionError", "WebTransaction/Function/hc.accounts.views:project"],
        "crash": ["hc/lib/emails.py", 67],
        "origin": ["hc/accounts/models.py", [414, 415]],
        "alternatives": [["hc/lib/emails.py", [66, 70]], ["hc/accounts/views.py", [426, 432]]],
        "keywords": ["EMAIL_HOST", "smtp", "invite"],
        "test": None,
        "noise": [["django.http.request:UnreadablePostError", "WebTransaction/Function/hc.api.views:ping"]],
        "files": ["hc/accounts/models.py", "hc/accounts/views.py", "hc/accounts/urls.py", "hc/urls.py",
                  "hc/lib/emails.py", "hc/settings.py", "hc/api/views.py", "hc/api/urls.py"],
        "notes": "A self-hosted instance without EMAIL_HOST (SMTP not configured) can still add team members: POST "
                 "/projects/<code>/settings/ with invite_team_member calls Project.invite, which sends the new member a "
                 "sign-in link; hc.lib.emails.send asserts settings.EMAIL_HOST and raises AssertionError. The real fix "
                 "(#930) makes Project.invite skip the login email when EMAIL_HOST is not set, in the caller "
                 "(hc/accounts/models.py), away from the assert in hc/lib/emails.py. The ping view's "
                 "UnreadablePostError rows are clients that disconnected mid-upload.",
    },
    {
        "slug": "group-test-notification",
        "title": "Sending a test notification to a Group integration raises ValueError (unsaved related object)",
        "parent": "89aa0a832b18f52dff3051b9c872f7a5d6ced807",
        "fix": "02888e6db93cbee9a614fbbc4a2097ea2f8d3e7c",
        "root": "/usr/src/app", "venv": "/venv", "env": SMTP,
        "setup": "group-test-notification",
        "requests": [
            {"method": "GET", "path": "/projects/{project}/integrations/", "times": 2},
            {"method": "POST", "path": "/integrations/{email}/test/", "times": 1},
            {"method": "POST", "path": "/integrations/{group}/test/", "times": 3},
        ],
        "error": ["builtins:ValueError", "WebTransaction/Function/hc.front.views:send_test_notification"],
        "crash": ["hc/api/models.py", 878],
        "origin": ["hc/api/transports.py", [1217, 1225]],
        "alternatives": [["hc/api/models.py", [864, 878]]],
        "keywords": ["group", "is_test", "test notification"],
        "test": "hc.front.tests.test_send_test_notification.SendTestNotificationTestCase.test_it_handles_group_channel",
        "files": ["hc/api/models.py", "hc/api/transports.py", "hc/front/views.py", "hc/front/urls.py", "hc/urls.py"],
        "notes": "\"Send Test Notification\" builds a dummy, unsaved Check and calls channel.notify(dummy, "
                 "is_test=True), which leaves the Notification's owner empty. For a Group integration, "
                 "Group.notify forwards to each member channel with channel.notify(check), dropping is_test, so the "
                 "member's Notification gets owner = the unsaved dummy check and n.save() raises ValueError. The "
                 "real fix passes is_test through in Group.notify (hc/api/transports.py), away from the crash in "
                 "Channel.notify.",
    },
    {
        "slug": "docs-search-fts-operator",
        "title": "Searching the docs for AND/OR/NOT raises sqlite3.OperationalError (fts5 syntax error)",
        "parent": "82ed3923612f240f7ecfd548c8e6caa9b262ca8b",
        "fix": "bd64fab619b385274610f2c6cfe0c7c767559bb5",
        "root": "/home/hc/healthchecks", "venv": "/home/hc/.virtualenvs/hc", "env": SMTP,
        "setup": "docs-search-fts-operator",
        "requests": [
            {"method": "GET", "path": "/docs/search/?q=cron", "times": 3, "session": False},
            {"method": "GET", "path": "/docs/search/?q=AND", "times": 2, "session": False},
            {"method": "GET", "path": "/docs/search/?q=NOT", "times": 1, "session": False},
            {**CLIENT_GONE, "times": 1},
        ],
        "error": ["sqlite3:OperationalError", "WebTransaction/Function/hc.front.views:docs_search"],
        "crash": ["hc/front/views.py", 491],
        "origin": ["hc/front/views.py", [488, 488]],
        "alternatives": [["hc/front/forms.py", [380, 381]]],
        "keywords": ["fts5", "query", "quote"],
        "test": None,
        "noise": [["django.http.request:UnreadablePostError", "WebTransaction/Function/hc.api.views:ping"]],
        "files": ["hc/front/views.py", "hc/front/urls.py", "hc/front/forms.py", "hc/urls.py", "hc/api/views.py",
                  "hc/api/urls.py"],
        "notes": "The docs search box passes the user's words straight to SQLite's FTS5 MATCH; a query that is an FTS5 "
                 "operator on its own (AND, OR, NOT) is a syntax error, and cur.execute raises "
                 "sqlite3.OperationalError. The real fix wraps the query in double quotes so FTS5 reads it as a "
                 "string. The ping view's UnreadablePostError row is a client that disconnected mid-upload.",
    },
    {
        "slug": "pause-non-object-body",
        "title": "The pause API called with a bare JSON number as body raises AttributeError in the authorize decorator",
        "parent": "829a39f4cf33fb3eeb8d69f61f3e1e5cd531f5ec",
        "fix": "ba3f222f37ae0e8d2d847e71e1e1fdf9b61c4913",
        "root": "/opt/healthchecks", "venv": "/opt/healthchecks/.venv", "env": SMTP,
        "setup": "pause-non-object-body",
        "requests": [
            {"method": "POST", "path": "/api/v1/checks/{check}/pause", "content_type": "application/json",
             "body": '{{"api_key": "{api_key}"}}', "times": 2, "session": False},
            {"method": "POST", "path": "/api/v1/checks/{check}/pause", "content_type": "application/json",
             "body": "123", "times": 3, "session": False},
        ],
        "error": ["builtins:AttributeError", "WebTransaction/Function/hc.api.views:pause"],
        "crash": ["hc/api/decorators.py", 20],
        "origin": ["hc/api/decorators.py", [64, 88]],
        "alternatives": [["hc/api/decorators.py", [16, 22]]],
        "keywords": ["json", "dict", "api_key"],
        "test": "hc.api.tests.test_pause.PauseTestCase.test_it_rejects_non_dict_post_body",
        "files": ["hc/api/decorators.py", "hc/api/views.py", "hc/api/urls.py", "hc/urls.py", "hc/lib/jsonschema.py"],
        "notes": "The API views parse the request body with the validate_json decorator into request.json, and "
                 "authorize then reads the API key from it with request.json.get(\"api_key\"). A client that posts a "
                 "bare JSON number (\"123\") to /api/v1/checks/<uuid>/pause gets request.json = 123, and authorize "
                 "raises AttributeError: 'int' object has no attribute 'get'. The real fix makes validate_json "
                 "validate every body against {\"type\": \"object\"} (a 400 for anything but a JSON object), in "
                 "the decorator that parses the body, not in authorize where it crashed; checking the type in "
                 "authorize would also be accepted.",
    },
    {
        "slug": "ping-non-utf8-body",
        "title": "A ping whose request body is not valid UTF-8 raises UnicodeDecodeError in hc.api.views.ping",
        "parent": "38c480bab5b0dbd1888e5fbee67bad37b5d6366d",
        "fix": "829a39f4cf33fb3eeb8d69f61f3e1e5cd531f5ec",
        "root": "/var/www/healthchecks", "venv": "/var/www/healthchecks/env", "env": SMTP,
        "setup": "ping-non-utf8-body",
        "requests": [
            {"method": "POST", "path": "/ping/{check}", "content_type": "text/plain", "body": "backup done: 12 files",
             "times": 3, "session": False},
            {"method": "POST", "path": "/ping/{check}", "content_type": "text/plain",
             "body": "Sauvegarde termin\u00e9e", "encoding": "latin-1", "times": 2, "session": False},
            {**CLIENT_GONE, "path": "/ping/{check}", "times": 2},
        ],
        "error": ["builtins:UnicodeDecodeError", "WebTransaction/Function/hc.api.views:ping"],
        "crash": ["hc/api/views.py", 50],
        "origin": ["hc/api/views.py", [50, 50]],
        "alternatives": [],
        "keywords": ["utf-8", "decode", "body"],
        "test": "hc.api.tests.test_ping.PingTestCase.test_it_handles_bad_unicode",
        "noise": [["django.http.request:UnreadablePostError", "WebTransaction/Function/hc.api.views:ping"]],
        "files": ["hc/api/views.py", "hc/api/urls.py", "hc/urls.py", "hc/api/models.py"],
        "notes": "The ping endpoint stores the request body as text with request.body.decode(), which assumes UTF-8; "
                 "a client posting Latin-1 output (a French \"termin\u00e9e\" from a cron job's log) makes decode raise "
                 "UnicodeDecodeError. The real fix (#574) decodes with errors=\"replace\" on the crash line. The "
                 "UnreadablePostError rows of the same transaction are clients that disconnected mid-upload.",
    },

]


def git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True).stdout


def deploy(git_dir: str, case: dict, sentry: bool = False) -> Path:
    """The parent's tree at the production path, with its venv (requirements.txt + the agent, or sentry-sdk) where
    it really lives."""
    root, venv = Path(case["root"]), Path(case["venv"])
    for path in (root, venv):
        if path.exists():
            shutil.rmtree(path)
    root.mkdir(parents=True)
    archive = git(git_dir, "archive", case["parent"])
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    if sentry:
        return sentry_events.environment(venv, root / "requirements.txt", "healthchecks_drive.py", "django")
    python = make_environment(AGENT, venv, ["-r", str(root / "requirements.txt")])
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for name in ("healthchecks_drive.py", "monitors.py"):
        shutil.copy(Path(__file__).with_name(name), Path(site) / "capture_server" / name)
    return python


def capture(python: Path, case: dict) -> dict:
    WORK.mkdir(parents=True, exist_ok=True)
    audit, log, ini = (WORK / f"{case['slug']}.{ext}" for ext in ("audit.log", "agent.log", "ini"))
    audit.unlink(missing_ok=True)
    ini.write_text(INI.format(app_name=APP_NAME, audit=audit, log=log), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEW_RELIC_", "NIGHTWATCH_", "ANTHROPIC_", "DB"))}
    spec = {"setup": case["setup"], "requests": case["requests"], "env": {**ENV, **case["env"]}}
    proc = subprocess.run([str(python), "-m", "capture_server.healthchecks_drive", case["root"], str(ini), json.dumps(spec)],
                          capture_output=True, text=True, env=env, cwd=case["root"], timeout=600)
    print(proc.stdout, end="")
    if proc.returncode != 0:
        raise SystemExit(f"{case['slug']}: the driver failed:\n{proc.stderr[-4000:]}")
    return read_audit_log(audit)


def capture_sentry(python: Path, case: dict) -> Path:
    """The case's requests under sentry-sdk; every event it sent, checked for the case's error, as sentry_events.json."""
    spec = {"setup": case["setup"], "requests": case["requests"], "env": {**ENV, **case["env"]}}
    requests, events = sentry_events.run(python, "capture_server.healthchecks_drive", case, spec, WORK,
                                         "healthchecks-web-1", drop=("DB",))
    sentry_events.check(events, case, case["error"][0], tuple(case["crash"]))
    return sentry_events.write(EVALS / f"healthchecks-{case['slug']}", python, case, requests, events, ("django",))


def app_frames(export: dict, case: dict, error: list[str]) -> list[tuple[str, int]]:
    """The frames of the checkout (not the venv) in `error`'s first trace, outermost first, repository-relative."""
    root, venv = case["root"].rstrip("/") + "/", case["venv"].rstrip("/") + "/"
    for detail in export["details"]:
        if [detail["error_class"], detail["transaction"]] != list(error):
            continue
        frames = []
        for line in detail["error_traces"]["data"]["actor"]["account"]["nrql"]["results"][0]["stackTrace"]:
            path = line.strip().split('"')[1] if line.strip().startswith("File ") else ""
            if path.startswith(root) and not path.startswith(venv):
                frames.append((path[len(root):], int(line.split(", line ")[1].split(",")[0])))
        return frames
    raise SystemExit(f"{case['slug']}: no error {error} with a trace in the capture")


def write_case(git_dir: str, case: dict, payloads: dict, python: Path) -> Path:
    export = export_of(payloads, APP_NAME, account_id=ACCOUNT_ID)
    found = app_frames(export, case, case["error"])[-1]
    if found != tuple(case["crash"]):
        raise SystemExit(f"{case['slug']}: the trace's first in-app frame is {found}, the case says {case['crash']}")
    facets = {tuple(d[k] for k in ("error_class", "transaction")) for d in export["details"]}
    for noise in case.get("noise", []):
        if tuple(noise) not in facets:
            raise SystemExit(f"{case['slug']}: noise row {noise} not captured; got {sorted(facets)}")
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True)
    versions = {p["name"].lower(): p["version"] for p in json.loads(listed.stdout or "[]")} if listed.returncode == 0 else {}
    export["captured"] = {"versions": {k: versions[k] for k in ("newrelic", "django") if k in versions},
                          "requests": [f"{r['method']} {r['path']} x{r.get('times', 1)}" for r in case["requests"]],
                          "deployed_at": case["root"], "venv": case["venv"]}
    folder = EVALS / f"healthchecks-{case['slug']}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "export.json").write_text(json.dumps(export, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    write_files(git_dir, case, folder, export)
    return folder


def write_files(git_dir: str, case: dict, folder: Path, export: dict) -> None:
    """expected.yml, and the case's slice of evals/apps/healthchecks/history.bundle: the history up to the parent of the
    LICENSE, every in-app file of the case's traces, the fix's files and the rest the night needs."""
    (folder / "expected.yml").write_text(expected_yml(f"healthchecks-{case['slug']}", (REPOSITORY, "BSD-3-Clause"), case, tuple(case["error"]), tuple(case["crash"]), folder / "expected.yml"), encoding="utf-8")
    traced = {path for error in [case["error"], *case.get("noise", [])] for path, _ in app_frames(export, case, error)}
    wanted = {"LICENSE", case["crash"][0], case["origin"][0], *(a[0] for a in case["alternatives"]), *case["files"],
              *traced}
    write_slice(Path(git_dir), "healthchecks", folder.name, case["parent"], wanted)  # the case's code: its files' history


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help="a clone (bare is fine) of github.com/healthchecks/healthchecks")
    parser.add_argument("--only", action="append", help="a case slug (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the deployment folders (for debugging)")
    parser.add_argument("--files-only", action="store_true",
                        help="rewrite expected.yml and the case's slice from the case's existing export.json (no capture)")
    parser.add_argument("--sentry", action="store_true", help="capture under sentry-sdk into sentry_events.json")
    args = parser.parse_args()
    for case in CASES:
        if args.only and case["slug"] not in args.only:
            continue
        if args.files_only:
            folder = EVALS / f"healthchecks-{case['slug']}"
            write_files(args.git_dir, case, folder, json.loads((folder / "export.json").read_text(encoding="utf-8")))
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
                for path in (case["root"], case["venv"]):
                    shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
