"""Provision a fresh Bugsink for the tests: run by Bugsink's own interpreter (.tools/bugsink/bin/python) in the folder
of its configuration (bugsink_conf.py, which names the databases), never imported by NightWatch or pytest.

Migrates both databases (Bugsink's and snappea's, its task queue; nothing to do when they are copies of the ones
`make bugsink` migrated), then does what a person does in the UI on a new install: a user (its password from BUGSINK_TEST_PASSWORD), a team and a project the user administers (as
`projects.views.project_new` makes them), and an API token bound to that project that may read it, its issues, its
events and its releases, the least NightWatch needs. A second project (for the tests that play many nights) gets the
same, and a token of its own for what the team and its CI do there: triage issues (resolve, mute) and create
releases. Prints one JSON line: the projects' ids, DSNs and tokens and the user's name.
"""

import json
import os

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

call_command("migrate", verbosity=0)
call_command("migrate", database="snappea", verbosity=0)

from bsmain.models import AuthToken  # noqa: E402
from projects.models import Project, ProjectMembership, ProjectRole  # noqa: E402
from teams.models import Team, TeamMembership, TeamRole  # noqa: E402

USER = "ops@bookshop.example"
user = get_user_model().objects.create_superuser(username=USER, email=USER, password=os.environ["BUGSINK_TEST_PASSWORD"])
team = Team.objects.create(name="Bookshop")
TeamMembership.objects.create(team=team, user=user, role=TeamRole.ADMIN, accepted=True)


def project_for(name: str) -> tuple[Project, AuthToken]:
    made = Project.objects.create(team=team, name=name)
    ProjectMembership.objects.create(project=made, user=user, role=ProjectRole.ADMIN, accepted=True)
    reader = AuthToken.objects.create(description="NightWatch", is_project_bound=True, project=made, projects_read=True,
                                      issues_read=True, events_read=True, releases_read=True)
    return made, reader


project, token = project_for("bookshop-production")
nights, nights_token = project_for("bookshop-nights")
team_token = AuthToken.objects.create(description="the team and its CI", is_project_bound=True, project=nights,
                                      issues_read=True, issues_triage=True, releases_read=True, releases_create=True)
print(json.dumps({"project": project.id, "dsn": project.dsn, "token": token.token, "user": USER,
                  "nights": {"project": nights.id, "dsn": nights.dsn, "token": nights_token.token,
                             "team_token": team_token.token}}))
