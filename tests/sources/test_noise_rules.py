"""The shipped noise rules: applied to NerdGraph and to export files alike, each drop reported with its rule."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from nightwatch.ignore import DEFAULT_NOISE_FILE, load_ignore_rules, noise_rules
from nightwatch.models import ErrorGroup, Window
from nightwatch.selection import select_errors
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.sources.nerdgraph import NerdGraphClient, NerdGraphSource
from tests.fakes.nerdgraph import (
    FAKE_API_KEY,
    SAMPLE_EXPORTED_AT,
    FakeNerdGraph,
    NerdGraphDataset,
    _facet,
    sample_export,
)

SCANNER_PATHS = [
    "/wp-login.php", "/wp-admin/setup-config.php", "/xmlrpc.php", "/.env", "/api/.env", "/.git/config", "/phpmyadmin/index.php",
    "/cgi-bin/luci", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", "/index.php?s=/Index/think", "/owa/auth/logon.aspx",
    "/actuator/health", "/solr/admin/info/system", "/boaform/admin/formLogin", "/HNAP1/", "/.aws/credentials",
    "/static/../../../../etc/passwd", "/server-status", "/autodiscover/autodiscover.xml", "/default.asp", "/shell.jsp",
    "/WP-LOGIN.PHP", "/.DS_Store", "/admin/config.php5",
]
APPLICATION_PATHS = ["/orders/12/receipt", "/stories/abc123/edit", "/u/alice/comments", "/api/v1/orders.json", "/php-guide",
                     "/tags/php", "/search?q=wordpress+plugin", "/s/zx9/wp_migration_notes", "/environments/new"]


def routing_error(path: str) -> ErrorGroup:
    return ErrorGroup(error_class="ActionController::RoutingError", transaction="Controller/ActionController::RoutingError",
                      message=f'No route matches [GET] "{path}"', occurrences=10, http_status=404)


def test_the_shipped_file_is_valid_and_every_rule_has_a_name_and_a_reason() -> None:
    rules = load_ignore_rules(DEFAULT_NOISE_FILE)
    assert len(rules) >= 6
    assert all(r.name and r.reason for r in rules)
    assert len({r.name for r in rules}) == len(rules)


@pytest.mark.parametrize("path", SCANNER_PATHS)
def test_scanner_probes_are_noise(path: str) -> None:
    rules = noise_rules(None)
    assert [r.name for r in rules if r.matches(routing_error(path))] == ["scanner-paths"]


@pytest.mark.parametrize("path", APPLICATION_PATHS)
def test_routing_errors_of_the_applications_own_paths_are_not(path: str) -> None:
    assert not any(r.matches(routing_error(path)) for r in noise_rules(None))


def test_a_defect_is_never_dropped_by_the_defaults() -> None:
    defects = [
        ErrorGroup(error_class="NoMethodError", transaction="Controller/stories/show", message="undefined method `title' for nil"),
        ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/show", message="Couldn't find Order"),
        ErrorGroup(error_class="ArgumentError", transaction="Controller/search/index", message="invalid byte sequence in UTF-8"),
    ]
    assert not any(r.matches(e) for r in noise_rules(None) for e in defects)


def test_the_teams_rules_come_first_and_defaults_can_be_turned_off(tmp_path: Path) -> None:
    ignore = tmp_path / "ignore.yml"
    ignore.write_text('ignore:\n  - pattern: "ActionController::RoutingError"\n    match: exact\n    reason: "all 404s"\n')
    assert noise_rules(ignore)[0].reason == "all 404s"
    assert len(noise_rules(ignore, defaults=False)) == 1
    assert noise_rules(None, defaults=False) == []


def _with_noise(export: dict) -> dict:
    """The sample export plus a scanner 404 and a crawler's unknown format."""
    rows = export["errors"]["data"]["actor"]["account"]["nrql"]["results"]
    rows.append(_facet("ActionController::RoutingError", "Controller/ActionController::RoutingError", 1840,
                       'No route matches [GET] "/wp-login.php"', 20, 1, 404))
    rows.append(_facet("ActionController::UnknownFormat", "Controller/stories/index", 77,
                       "StoriesController#index is missing a template for this request format", 20, 1, 406))
    return export


def test_noise_is_dropped_from_nerdgraph_and_from_export_files_alike(tmp_path: Path) -> None:
    export = _with_noise(sample_export())
    window = Window.ending_at(SAMPLE_EXPORTED_AT, timedelta(hours=48))
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    with FakeNerdGraph(NerdGraphDataset.from_export(export)) as fake:
        client = NerdGraphClient(SecretStr(FAKE_API_KEY), fake.account_id, fake.url, backoff_s=0.01)
        live = select_errors(NerdGraphSource(client, export["app_name"]), window, noise_rules(None), 20, SAMPLE_EXPORTED_AT)
    offline = select_errors(ExportFileSource(path), window, noise_rules(None), 20, SAMPLE_EXPORTED_AT)
    for selection in (live, offline):
        assert [(d.rule, d.errors, d.occurrences) for d in selection.noise] == [("scanner-paths", 1, 1840), ("unknown-format", 1, 77)]
        assert "wp-login" in selection.noise[0].examples[0]
        assert not any(e.error_class.startswith("ActionController::") for e in selection.selected)
        assert len(selection.ignored) == 2
