"""The documentation site: it builds with `mkdocs build --strict` (CI's check: a broken link, a missing page or a nav
entry without its file fails `make test`), its configuration page is what the settings model says, every example query
of the analysts' page runs on a real night's metrics, and two built pages render in headless Chromium with their
title, their navigation and no internal link that leads nowhere."""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from tests.prefect_processes import run_process_group

ROOT = Path(__file__).resolve().parents[1]
ANALYSTS_PAGE = ROOT / "docs" / "analysts.md"
BUILD_GUARD_S = 300  # hang guards: the build takes about 1.5 s, a page in Chromium about 2 s
BROWSER_GUARD_S = 120


def mkdocs_build(site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site), "--config-file",
               str(ROOT / "mkdocs.yml")]
    return run_process_group(command, env=env, cwd=ROOT, timeout=BUILD_GUARD_S)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the module with --strict."""
    folder = tmp_path_factory.mktemp("site")
    built = mkdocs_build(folder)
    assert built.returncode == 0, built.stderr[-4000:]
    return folder


def test_the_site_builds_with_strict_and_has_every_page_of_its_nav(site: Path) -> None:
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    pages = re.findall(r": ([\w-]+)\.md$", nav, re.M)
    assert len(pages) >= 20
    for page in pages:
        built = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert built.is_file(), page


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The check CI relies on: copy the site's sources with one link that leads nowhere, and the build fails naming it."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    for kept in ("CHANGELOG.md", "evals/README.md", "knowledge_store/SCHEMA.md"):  # pages show these (snippets)
        (project / kept).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / kept, project / kept)
    with (project / "docs" / "night.md").open("a") as page:
        page.write("\nSee [the missing page](missing.md).\n")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    built = run_process_group([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                              env=env, cwd=project, timeout=BUILD_GUARD_S)
    assert built.returncode != 0 and "missing.md" in built.stderr


def test_the_configuration_page_is_what_the_settings_model_says() -> None:
    checked = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_config_reference.py"), "--check"],
                             capture_output=True, text=True, timeout=BUILD_GUARD_S)
    assert checked.returncode == 0, checked.stderr


def test_the_env_example_names_every_setting() -> None:
    from nightwatch.settings import Settings, env_names

    example = (ROOT / ".env.example").read_text()
    missing = [name for name, field in Settings.model_fields.items() if f"# {env_names(name, field)[-1]}=" not in example]
    assert missing == []


def test_the_configuration_page_names_every_setting_by_each_of_its_variables() -> None:
    from nightwatch.settings import Settings

    page = (ROOT / "docs" / "configuration.md").read_text()
    for name, field in Settings.model_fields.items():
        names = field.validation_alias.choices if field.validation_alias else [f"NIGHTWATCH_{name.upper()}"]
        for variable in names:
            assert f"`{variable}`" in page, (name, variable)
    assert "`ANTHROPIC_API_KEY`" in page and "`NIGHTWATCH_ANTHROPIC_API_KEY`" in page


# The analysts' page -------------------------------------------------------------------------------------------------

def example_queries(page: str) -> list[str]:
    """Every query the page shows: each statement of its ```sql blocks, and each `nightwatch metrics --sql "…"`."""
    queries = []
    for block in re.findall(r"^```sql\n(.*?)^```", page, re.M | re.S):
        text = "\n".join(line.split("--")[0].rstrip() for line in block.splitlines())
        queries += [q.strip() for q in text.split(";") if q.strip()]
    queries += re.findall(r'nightwatch metrics --sql "([^"]+)"', page)
    queries += re.findall(r"c\.sql\('([^']+)'\)", page)
    return queries


def test_the_analysts_page_shows_queries() -> None:
    assert len(example_queries(ANALYSTS_PAGE.read_text())) >= 8


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_every_example_query_of_the_analysts_page_answers_on_a_real_night(nightwatch_home: Path) -> None:
    from nightwatch.flows.nightwatch import run_night
    from nightwatch.knowledge_store.duck import connect_readonly
    from nightwatch.knowledge_store.summary import read_only, run_query

    report = run_night(until=datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc), max_errors=3)
    assert report.totals.model_calls > 0
    empty = []
    with connect_readonly(nightwatch_home) as con:
        for query in example_queries(ANALYSTS_PAGE.read_text()):
            if not run_query(con, read_only(query)).rows:  # as `nightwatch metrics --sql` runs it
                empty.append(query)
    assert empty == [], f"queries of docs/analysts.md that found nothing on a night: {empty}"


# Two pages in headless Chromium ------------------------------------------------------------------------------------

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark_chromium = pytest.mark.skipif(
    BROWSER is None and not os.environ.get("CI"),
    reason="headless Chromium is not installed (Debian: apt-get install chromium; CI installs it: .ci/run)",
)


class Page(HTMLParser):
    """What a rendered page shows: its title, its navigation links, its headings, and every address it refers to."""

    def __init__(self) -> None:
        super().__init__()
        self.title, self.h1, self.nav_links, self.refs = "", "", [], []
        self._in: list[str] = []
        self._nav_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self._in.append(tag)
        if tag == "nav" and "md-nav" in (a.get("class") or ""):
            self._nav_depth += 1
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "link", "img", "script"):
                self.refs.append(a[key])
        if tag == "a" and self._nav_depth and a.get("href"):
            self.nav_links.append(a["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self._nav_depth:
            self._nav_depth -= 1
        if tag in self._in:
            del self._in[len(self._in) - 1 - self._in[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "title":
            self.title += data
        elif "h1" in self._in:
            self.h1 += data


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free loopback port, as `mkdocs serve` would show it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def rendered(url: str, profile: Path) -> str:
    """The page's DOM after its scripts ran, from headless Chromium (flags for root and a closed network)."""
    if BROWSER is None:
        pytest.fail("headless Chromium is not installed: apt-get install chromium (.ci/run installs it in CI)")
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", url]
    profile.mkdir()  # a new, empty profile each time
    done = run_process_group(command, env=dict(os.environ), cwd=profile, timeout=BROWSER_GUARD_S)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


def local_file(site: Path, base: str, url: str, ref: str) -> Path | None:
    """The file of the site an address on the page leads to, or None for another site's address."""
    target = urlsplit(urljoin(url, ref))
    if target.scheme not in ("http", "https") or target.netloc != urlsplit(base).netloc:
        return None
    path = unquote(target.path)
    return site / (path.lstrip("/") + "index.html" if path.endswith("/") else path.lstrip("/"))


@pytestmark_chromium
@pytest.mark.slow
@pytest.mark.parametrize(("page", "title", "heading"), [
    ("", "NightWatch", "NightWatch"),
    ("configuration/", "Configuration - NightWatch", "Configuration reference"),
])
def test_a_built_page_renders_in_chromium_with_its_navigation_and_no_broken_link(
        site: Path, served: str, tmp_path: Path, page: str, title: str, heading: str) -> None:
    url = served + page
    shown = Page()
    shown.feed(rendered(url, tmp_path / "profile"))
    assert shown.title.strip() == title and shown.h1.strip().rstrip("¶").strip() == heading
    navigation = {urlsplit(urljoin(url, link)).path for link in shown.nav_links}
    for section in ("/getting-started/", "/configuration/", "/benchmarks/", "/prefect/", "/analysts/"):
        assert section in navigation, (section, sorted(navigation))
    missing = sorted({ref for ref in shown.refs if (f := local_file(site, served, url, ref)) and not f.is_file()})
    assert missing == [], f"{url} links to files the site does not have: {missing}"
    assert len(shown.refs) > 20


def test_no_file_cites_a_document_the_repository_does_not_hold() -> None:
    """A Markdown document the code, a docstring or a page names (`docs/night.md`, `SCHEMA.md`) is a file here; design
    documents kept elsewhere are not cited. The files a night writes (report.md, PR.md) and the tests' own fixtures
    are not documents."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    written = {"report.md", "PR.md"}
    read = [p for p in tracked if p.endswith((".py", ".md", ".yml", ".toml")) and not p.startswith(("tests/", "evals/"))]
    named = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
    missing = []
    for path in read:
        for lineno, line in enumerate((ROOT / path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(r"\bseed \d{3}\b", line):
                missing.append(f"{path}:{lineno}: a design seed")
            for doc in named.findall(line):
                places = (doc, str(Path(path).parent / doc))
                if "://" not in line and doc not in written and not any(
                        p in tracked or any(t.endswith("/" + p) for t in tracked) for p in places):
                    missing.append(f"{path}:{lineno}: {doc}")
    assert missing == []
