"""Drive one Healthchecks case under the real New Relic Python agent (developer mode) or the real Sentry SDK.

Runs inside the case's throwaway venv (copied next to `capture_server.drive`, so its frames are a server's, in
site-packages), with the Healthchecks checkout deployed at its production path as the working directory:

    python -m capture_server.healthchecks_drive <root> <newrelic.ini>|sentry <case json>

The database is Healthchecks' default SQLite file in the checkout (no DB env set); `migrate` creates it. Each case's
`setup` creates the rows its requests need, through the application's own models; the requests then go through
Django's WSGI handler as gunicorn or uWSGI would call it (`capture_server.app_traffic.wsgi_call`).
"""

from __future__ import annotations

import io
import json
import os
import sys
import uuid
from pathlib import Path

from capture_server import monitors
from capture_server.app_traffic import FailingInput, wsgi_call

CSRF = "k" * 32  # a CSRF secret, sent as the cookie and echoed in the header, as a browser's form post does
HOST = "healthchecks.example.org"


def with_request(app, content_type: str, cookie: str, extra: dict | None = None):
    """The WSGI environ a browser's request would carry (form content type, cookies, CSRF header)."""

    def call(environ, start_response):
        environ = {**environ, "CONTENT_TYPE": content_type, "HTTP_COOKIE": cookie, "HTTP_X_CSRFTOKEN": CSRF,
                   **(extra or {})}
        return app(environ, start_response)

    return call


def session_cookie(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"csrftoken={CSRF}; sessionid={client.cookies['sessionid'].value}"


def make_user(email: str, username: str | None = None):
    """A user with a profile and a default project, as signup makes them (`hc.accounts.views._make_user`)."""
    from django.contrib.auth.models import User
    from hc.accounts.models import Profile, Project

    user = User.objects.create(username=username or email.split("@")[0], email=email)
    user.set_password("password")
    user.save()
    Profile.objects.for_user(user)
    project = Project.objects.create(owner=user, name="Default Project", badge_key=str(uuid.uuid4()))
    return user, project


# Each setup returns (cookie, placeholders for the request paths)
def setup_login_email_username() -> tuple[str, dict]:
    # A user created by an external authentication backend (django-auth-ldap) whose username is their email
    make_user("alice@example.org", username="alice@example.org")
    make_user("bob@example.org", username="8ac0c5a8-0b7e-4a5e-9b1f-2b8f0bba3f7e")
    return f"csrftoken={CSRF}", {}


def setup_invite_without_smtp() -> tuple[str, dict]:
    from hc.api.models import Check

    user, project = make_user("alice@example.org")
    check = Check.objects.create(project=project, name="backups")
    return session_cookie(user), {"project": str(project.code), "check": str(check.code)}


def setup_group_test_notification() -> tuple[str, dict]:
    from hc.api.models import Channel, Check

    user, project = make_user("alice@example.org")
    email = Channel.objects.create(project=project, kind="email", value="alice@example.org", email_verified=True)
    group = Channel.objects.create(project=project, kind="group", value=str(email.code))
    check = Check.objects.create(project=project, name="nightly-db-dump")
    return session_cookie(user), {"project": str(project.code), "group": str(group.code), "email": str(email.code),
                                  "check": str(check.code)}


def setup_docs_search() -> tuple[str, dict]:
    from hc.api.models import Check

    user, project = make_user("alice@example.org")
    check = Check.objects.create(project=project, name="cron")
    return "", {"check": str(check.code)}


def setup_api_check() -> tuple[str, dict]:
    from hc.api.models import Check

    user, project = make_user("alice@example.org")
    project.api_key = "Hx3kQ9vL2mR7tW4yB8nC1dF6gJ5sA0pZ"
    project.save()
    check = Check.objects.create(project=project, name="db-backup", kind="simple")
    return "", {"check": str(check.code), "api_key": project.api_key}


SETUPS = {"pause-non-object-body": setup_api_check, "ping-non-utf8-body": setup_api_check, "login-email-username": setup_login_email_username, "invite-without-smtp": setup_invite_without_smtp,
          "group-test-notification": setup_group_test_notification, "docs-search-fts-operator": setup_docs_search}


def main() -> None:
    root, monitor, case = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    sys.path.insert(0, str(root))
    os.chdir(root)
    os.environ.update({"DJANGO_SETTINGS_MODULE": "hc.settings", "SITE_ROOT": f"https://{HOST}", **case.get("env", {})})
    harvest, finish = monitors.start(monitor)
    import django
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    django.setup()
    call_command("migrate", verbosity=0)
    # A production deploy's static step (DEBUG off: django-compressor serves the offline-compressed bundles)
    call_command("collectstatic", interactive=False, verbosity=0)
    call_command("compress", verbosity=0)
    cookie, values = SETUPS[case["setup"]]()
    app = get_wsgi_application()
    for request in case["requests"]:
        path = request["path"].format(**values)
        body = request.get("body", "").format(**values).encode(request.get("encoding", "utf-8"))
        stream = io.BufferedReader(FailingInput()) if request.get("client_gone") else None
        call = with_request(app, request.get("content_type", "application/x-www-form-urlencoded"),
                            cookie if request.get("session", True) else f"csrftoken={CSRF}")
        answers = [wsgi_call(call, request["method"], path, HOST, body, stream) for _ in range(request.get("times", 1))]
        print(request["method"], path, request.get("times", 1), sorted(set(answers)))
        harvest()
    finish()


if __name__ == "__main__":
    main()
