"""docs/configuration.md and .env.example from the settings model: every setting, its environment name(s), type,
default and description.

    python scripts/gen_config_reference.py          # write both
    python scripts/gen_config_reference.py --check  # exit 1 when either committed file is not what the model says

`tests/test_docs.py` runs `--check`, so a setting added, renamed or described anew fails the suite until both are
written again. A setting without a description stops the script: every setting a user can set is documented.
"""

from __future__ import annotations

import sys
import textwrap
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import SecretStr  # noqa: E402
from pydantic.fields import FieldInfo  # noqa: E402

from nightwatch.settings import Settings, env_names  # noqa: E402

PAGE = ROOT / "docs" / "configuration.md"
ENV_EXAMPLE = ROOT / ".env.example"

# The first setting of each section, in the model's order; the settings after it belong to it.
SECTIONS = {
    "home": "Where a night writes",
    "anthropic_api_key": "Anthropic",
    "newrelic_api_key": "New Relic",
    "source": "Error source",
    "sentry_auth_token": "Sentry, GlitchTip and Bugsink",
    "errors_file": "Export files, the demo and noise",
    "github_token": "Code host: GitHub or a local checkout",
    "slack_bot_token": "Slack",
    "since_hours": "A night",
    "prompt_caching": "Context management of investigations",
    "api_concurrency": "Triage traffic",
    "verify_fixes": "Verified fixes",
}

# Variables read outside the settings model: by the deployments, the CLI's calendar, the Makefile and the test runner.
OTHER_VARIABLES = [
    ("NIGHTWATCH_CHECKOUT", "the current folder (`make deploy`)", "The NightWatch checkout a worker's deployments run "
     "from; the deployments' pull step fails naming it when it is unset or wrong."),
    ("NIGHTWATCH_WORK_POOL", "`nightwatch`", "The work pool `make deploy` creates and registers the deployments on."),
    ("NIGHTWATCH_CRON", "`0 6 * * *`", "The `nightly` schedule of the deployments `make ui` serves (a work pool's "
     "comes from `prefect.yaml`, or the UI)."),
    ("NIGHTWATCH_TIMEZONE", "`UTC`", "The time zone of that schedule."),
    ("NIGHTWATCH_SETTINGS_BLOCK", "unset", "The NightWatch Config block the deployments `make ui` serves read."),
    ("NIGHTWATCH_LOG_LEVEL", "`INFO` for served and worker runs, `WARNING` for the CLI", "Prefect's log level for a "
     "night's logs."),
    ("NIGHTWATCH_AGENTS_DIR", "unset", "A folder of your own agent definitions (Markdown with YAML frontmatter); they "
     "override the shipped ones of the same name."),
    ("NIGHTWATCH_NOW", "unset: the real clock", "The calendar a command reads (`2027-01-15T06:00:00Z`): the instant the "
     "clock starts from, running on in real time; processes the command starts share it."),
    ("NIGHTWATCH_TEST_WORKERS", "`5`", "`make test`'s pytest workers; `0` runs the suite in one process."),
    ("NIGHTWATCH_TEST_NOW", "unset", "The calendar the test suite runs at (`make test-calendar` sets it)."),
]


def type_of(annotation: object) -> str:
    """A setting's type in a reader's words: text, a secret, a path, a number, true/false or the values it takes."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return type_of(args[0]) if len(args) == 1 else " or ".join(type_of(a) for a in args)
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    words = {SecretStr: "secret", Path: "path", bool: "true/false", int: "integer", float: "number", str: "text"}
    return words.get(annotation, str(annotation))  # type: ignore[call-overload]


def bounds(field: FieldInfo) -> str:
    """The field's numeric bounds (ge, gt, le, lt), in words."""
    words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
    found = [f"{words[key]} {value_text(getattr(m, key))}" for m in field.metadata for key in words
             if getattr(m, key, None) is not None]
    return ", ".join(found)


def value_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}" if value >= 10_000 else str(int(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if value >= 10_000 else str(value)
    return str(value)


def default_text(field: FieldInfo) -> str:
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value == "":
        return "empty"
    return f"`{value_text(value)}`"


def cell(text: str) -> str:
    """One table cell: on one line, its pipes escaped, and <home> shown as text rather than read as HTML."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def setting_row(name: str, field: FieldInfo) -> str:
    if not field.description:
        sys.exit(f"gen_config_reference: Settings.{name} has no description; give it one in nightwatch/settings.py")
    kind = type_of(field.annotation) + (f", {bounds(field)}" if bounds(field) else "")
    names = "<br>".join(f"`{n}`" for n in env_names(name, field))
    return f"| {names} | {default_text(field)} | {kind} | {cell(field.description)} |"


def settings_sections() -> list[str]:
    fields = Settings.model_fields
    unknown = sorted(set(SECTIONS) - set(fields))
    if unknown:
        sys.exit(f"gen_config_reference: SECTIONS names settings the model does not have: {', '.join(unknown)}")
    lines: list[str] = []
    for name, field in fields.items():
        if name in SECTIONS:
            lines += ["", f"## {SECTIONS[name]}", "", "| variable | default | type | description |", "|---|---|---|---|"]
        lines.append(setting_row(name, field))
    return lines


INTRO = """# Configuration reference

<!-- Generated by scripts/gen_config_reference.py from nightwatch/settings.py; do not edit by hand. -->

NightWatch reads one settings model, `Settings` in `nightwatch/settings.py`, from the environment and from a `.env`
file in the folder it runs in (copy `.env.example`, which is generated from the same model). Each setting's variable is
`NIGHTWATCH_` and its name in capitals; names are not case-sensitive. Where a service's SDK has a variable of its own
(`ANTHROPIC_API_KEY`, `NEW_RELIC_API_KEY`, `SENTRY_AUTH_TOKEN`, `SLACK_BOT_TOKEN`, ...), either name sets it; when
both are set, the first one listed wins. GitHub Actions' own variables (`GITHUB_TOKEN`, `GITHUB_REPOSITORY`,
`GITHUB_API_URL`) are read only with `NIGHTWATCH_GITHUB_ACTIONS=true`: every Actions job sets `GITHUB_REPOSITORY`
to its own repository, which is not where a night files issues unless you say so.

One precedence holds for every setting: a value given for this run (a flow parameter, a command's option), then an
environment variable (or the `.env` file), then a saved NightWatch Config block ([Deploying on Prefect](prefect.md)),
then the default. A block never hides a variable someone set on purpose. `nightwatch check` shows which services are
live, offline or misconfigured, where issues and pull requests will be written, and where each value it uses came
from (`--settings-block NAME` includes a block's). Relative paths (the default home `.nightwatch`, the `.env` file)
are read from the folder the command runs in; `check` prints them resolved.

Set all of a service's settings or none of them: a half-configured service stops the night with exit code 2, and
NightWatch never falls back to demo data in silence."""


def render() -> str:
    other = ["", "## Variables read outside the settings model", "",
             "| variable | default | what it does |", "|---|---|---|"]
    other += [f"| `{name}` | {default} | {cell(text)} |" for name, default, text in OTHER_VARIABLES]
    return "\n".join([INTRO, *settings_sections(), *other]) + "\n"


def env_example() -> str:
    """.env.example: each section's settings, commented out, each with its description and its default."""
    lines = ["# Generated by scripts/gen_config_reference.py from nightwatch/settings.py; do not edit by hand.",
             "# Copy to .env and set what you use: all of a service's settings, or none of them. The reference, with each",
             "# setting's type and bounds: docs/configuration.md.", ""]
    for name, field in Settings.model_fields.items():
        if name in SECTIONS:
            lines += ["", f"# --- {SECTIONS[name]}", ""]
        lines += textwrap.wrap(" ".join((field.description or "").split()), width=117, initial_indent="# ",
                               subsequent_indent="# ")
        default = field.default
        shown = "" if default is None else ("true" if default is True else "false" if default is False else str(default))
        lines.append(f"# {env_names(name, field)[-1]}={shown}")
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def main(argv: list[str]) -> int:
    written = {PAGE: render(), ENV_EXAMPLE: env_example()}
    if "--check" in argv:
        stale = [path for path, text in written.items() if (path.read_text(encoding="utf-8") if path.exists() else "") != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python scripts/gen_config_reference.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
