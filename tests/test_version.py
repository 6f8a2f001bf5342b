"""`nightwatch --version` says the installed package's version, and the changelog has an entry for it."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

from nightwatch.cli import app

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_package_metadata_s_and_pyproject_s() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"nightwatch {version('nightwatch')}\n"
    assert version("nightwatch") == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_changelog_opens_with_unreleased_then_this_version_and_its_date() -> None:
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == ("Unreleased", "")
    assert headings[1][0] == version("nightwatch") and headings[1][1], headings
