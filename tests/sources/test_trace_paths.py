"""Production trace paths mapped to the repository, through the real code hosts over real checkouts."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache, ToolRunner
from nightwatch.codehosts.github import GitHubHost
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.models import TraceData
from nightwatch.sources.parse import parse_stack_trace
from nightwatch.trace_paths import PathMap, locate_frames, parse_prefixes
from tests.fakes.github import FakeGitHub
from tests.gitrepo import commit_all

RAILS_FILES = {
    "app/models/story.rb": "class Story\n  def title\n    @title\n  end\nend\n",
    "app/controllers/stories_controller.rb": "class StoriesController\n  def show\n    @story.title\n  end\nend\n",
    "app/controllers/devise/sessions_controller.rb": "# an override of the engine's controller\n",
    "lib/markdowner.rb": "module Markdowner\nend\n",
    "config/routes.rb": "Rails.application.routes.draw {}\n",
}
DJANGO_FILES = {
    "manage.py": "#!/usr/bin/env python\n",
    "shop/settings.py": "DEBUG = False\n",
    "orders/views.py": "def detail(request, pk):\n    order = None\n    return order.total\n",
    "orders/models.py": "class Order:\n    pass\n",
}
SRC_LAYOUT_FILES = {
    "pyproject.toml": "[project]\nname = 'ledger'\n",
    "src/ledger/__init__.py": "",
    "src/ledger/posting.py": "def post(entry):\n    return entry['amount']\n",
    "src/ledger/cli.py": "from ledger.posting import post\n",
}


def checkout(tmp_path: Path, files: dict[str, str]) -> LocalRepoHost:
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return LocalRepoHost(commit_all(root))


def located(host: object, trace: str, prefixes: str = "") -> list[tuple[str, bool, bool, str]]:
    traces = TraceData(fingerprint="f", stack_frames=parse_stack_trace(trace))
    out = locate_frames(traces, PathMap.of_host(host, prefixes))
    return [(f.file, f.in_app, f.located, f.deployed_path) for f in out.stack_frames]


RAILS_TRACES = {
    "capistrano release": "/var/www/lobsters/releases/20261119143012",
    "capistrano current": "/var/www/lobsters/current",
    "docker /app": "/app",
    "docker /usr/src/app": "/usr/src/app",
    "rails 7.1 dockerfile": "/rails",
    "heroku": "/app",
    "srv": "/srv/lobsters",
    "home deploy": "/home/deploy/apps/lobsters/releases/3",
}


@pytest.mark.parametrize("root", RAILS_TRACES.values(), ids=RAILS_TRACES.keys())
def test_rails_frames_map_to_the_checkout_and_gems_stay_framework(tmp_path: Path, root: str) -> None:
    host = checkout(tmp_path, RAILS_FILES)
    trace = "\n".join([
        f"{root}/app/models/story.rb:3:in `title'",
        f"{root}/app/controllers/stories_controller.rb:3:in `show'",
        f"{root}/lib/markdowner.rb:1:in `<module:Markdowner>'",
        f"{root}/vendor/bundle/ruby/3.3.0/gems/actionpack-7.1.3/lib/abstract_controller/base.rb:224:in `process_action'",
        "/var/www/lobsters/shared/bundle/ruby/3.3.0/gems/devise-4.9.3/app/controllers/devise/sessions_controller.rb:19:in `create'",
        "/usr/local/bundle/gems/puma-6.4.2/lib/puma/thread_pool.rb:155:in `block in spawn_thread'",
        "/usr/local/lib/ruby/3.3.0/monitor.rb:202:in `synchronize'",
    ])
    frames = located(host, trace)
    assert frames[:3] == [
        ("app/models/story.rb", True, True, f"{root}/app/models/story.rb"),
        ("app/controllers/stories_controller.rb", True, True, f"{root}/app/controllers/stories_controller.rb"),
        ("lib/markdowner.rb", True, True, f"{root}/lib/markdowner.rb"),
    ]
    # a gem's own app/ folder is the gem's, even when the application overrides a file of the same path
    assert [(in_app, found) for _, in_app, found, _ in frames[3:]] == [(False, False)] * 4


def test_relative_frames_are_taken_as_given_and_windows_paths_are_normalised(tmp_path: Path) -> None:
    host = checkout(tmp_path, RAILS_FILES)
    frames = located(host, "app/models/story.rb:3:in `title'\nC:\\inetpub\\lobsters\\app\\controllers\\stories_controller.rb:3:in `show'")
    assert frames == [
        ("app/models/story.rb", True, True, ""),
        ("app/controllers/stories_controller.rb", True, True, "C:\\inetpub\\lobsters\\app\\controllers\\stories_controller.rb"),
    ]


def test_django_frames_map_and_site_packages_are_framework(tmp_path: Path) -> None:
    host = checkout(tmp_path, DJANGO_FILES)
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/srv/shop/venv/lib/python3.12/site-packages/django/core/handlers/base.py", line 197, in _get_response\n'
        '  File "/srv/shop/orders/views.py", line 3, in detail\n'
        "AttributeError: 'NoneType' object has no attribute 'total'\n"
    )
    assert located(host, trace) == [
        ("orders/views.py", True, True, "/srv/shop/orders/views.py"),
        ("/srv/shop/venv/lib/python3.12/site-packages/django/core/handlers/base.py", False, False, ""),
    ]


def test_an_installed_src_layout_package_maps_back_to_src(tmp_path: Path) -> None:
    host = checkout(tmp_path, SRC_LAYOUT_FILES)
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/site-packages/ledger/cli.py", line 1, in main\n'
        '  File "/usr/local/lib/python3.12/site-packages/ledger/posting.py", line 2, in post\n'
        '  File "/usr/local/lib/python3.12/site-packages/requests/api.py", line 59, in request\n'
        "KeyError: 'amount'\n"
    )
    assert [(f, app) for f, app, _, _ in located(host, trace)] == [
        ("/usr/local/lib/python3.12/site-packages/requests/api.py", False),
        ("src/ledger/posting.py", True),
        ("src/ledger/cli.py", True),
    ]


def test_explicit_prefixes_win_over_the_longest_suffix(tmp_path: Path) -> None:
    files = {"app/models/story.rb": "x\n", "models/story.rb": "y\n"}
    host = checkout(tmp_path, files)
    trace = "/opt/site/app/models/story.rb:1:in `x'"
    assert located(host, trace)[0][0] == "app/models/story.rb"  # the longest suffix
    assert located(host, trace, prefixes="/opt/site/app/")[0][0] == "models/story.rb"  # the configured root wins
    assert parse_prefixes(" /opt/site/app , C:\\deploy\\ ,,/ ") == ("/opt/site/app/", "/deploy/")


def test_frames_outside_the_repository_stay_application_code_and_are_named_in_a_note(tmp_path: Path) -> None:
    host = checkout(tmp_path, RAILS_FILES)
    traces = TraceData(fingerprint="f", stack_frames=parse_stack_trace(
        "/var/www/lobsters/releases/1/app/models/deleted_since.rb:9:in `x'\n/var/www/lobsters/releases/1/app/models/story.rb:3:in `title'"))
    out = locate_frames(traces, PathMap.of_host(host))
    assert [(f.file, f.in_app, f.located) for f in out.stack_frames] == [
        ("/var/www/lobsters/releases/1/app/models/deleted_since.rb", True, False), ("app/models/story.rb", True, True)]
    assert out.notes == ["1 application frame(s) name files that are not in the repository: "
                         "/var/www/lobsters/releases/1/app/models/deleted_since.rb"]


def test_a_host_that_cannot_list_its_files_leaves_frames_alone_and_says_why(tmp_path: Path) -> None:
    bare = tmp_path / "not-git"
    bare.mkdir()
    traces = TraceData(fingerprint="f", stack_frames=parse_stack_trace("/app/app/models/story.rb:3:in `title'"))
    out = locate_frames(traces, PathMap.of_host(LocalRepoHost(bare)))
    assert out.stack_frames == traces.stack_frames
    assert "is not a git checkout" in out.notes[0]


def test_the_github_host_maps_from_one_recursive_tree(tmp_path: Path) -> None:
    fake = FakeGitHub()
    for rel, text in RAILS_FILES.items():
        fake.add_file(rel, text)
    with fake:
        host = GitHubHost(fake.full_name, SecretStr(fake.token), base_url=fake.url, retries=0, seconds_between_requests=0)
        frames = located(host, "/var/www/lobsters/current/app/models/story.rb:3:in `title'")
    assert frames == [("app/models/story.rb", True, True, "/var/www/lobsters/current/app/models/story.rb")]


def test_read_file_given_a_production_path_reads_the_repository_file_and_says_so(tmp_path: Path) -> None:
    host = checkout(tmp_path, {**RAILS_FILES, ".env": "SECRET=1\n"})
    runner = ToolRunner(cache=CodeCache(host), traces=TraceData(fingerprint="f"), events=EventLog(), run_id="r",
                        fingerprint="f", allowed=["read_file"])
    deployed = "/var/www/lobsters/releases/20261119143012/app/models/story.rb"
    outcome = runner.run("read_file", {"path": deployed}, 1)
    assert not outcome.is_error
    assert outcome.text.splitlines()[0] == f"(mapped the production path {deployed} to the repository file app/models/story.rb)"
    assert "    3|     @title" in outcome.text
    assert runner.files_examined == ["app/models/story.rb"]
    for outside in ("/etc/passwd", "/var/www/lobsters/releases/1/.env", "/var/www/lobsters/shared/config/master.key"):
        refused = runner.run("read_file", {"path": outside}, 2)
        assert refused.is_error and ("absolute paths are not allowed" in refused.text or "withheld" in refused.text)
