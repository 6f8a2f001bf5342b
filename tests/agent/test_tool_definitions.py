"""A tool is defined once, by its function: its schema, its dispatch, the tools a definition may list and the tools a
night offers all come from that one definition (nightwatch.agent.tools.TOOLS). (No postponed annotations here: the
tools this file defines are local, and their argument models are read from their signatures.)"""

import subprocess
from pathlib import Path

import pytest
from pydantic import Field

from nightwatch.agent import tools
from nightwatch.agent.definitions import AgentDefinitionError, parse_definition
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import TOOLS, CodeCache, ToolArgs, ToolOutcome, ToolRunner, offered_tools, tool, tool_schemas
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.models import TraceData

DEFINITION = """---
name: custom
description: A team's own agent.
tools: [read_file, {tools}]
---
You are a careful engineer; read the code before you conclude.
"""


@pytest.fixture
def runner(tmp_path: Path):
    def make(allowed: list[str]) -> ToolRunner:
        (tmp_path / "repo").mkdir(exist_ok=True)
        (tmp_path / "repo" / "app.py").write_text("x = 1\n")
        for args in (["init", "-q"], ["add", "app.py"]):  # the host serves what git tracks
            subprocess.run(["git", "-C", str(tmp_path / "repo"), *args], check=True)
        return ToolRunner(cache=CodeCache(LocalRepoHost(tmp_path / "repo")), traces=TraceData(fingerprint="f"),
                          events=EventLog(tmp_path / "events.jsonl"), run_id="r", fingerprint="f", allowed=allowed)

    return make


@pytest.fixture
def count_lines():
    """A new tool, added as the documentation shows: one function, its arguments and its description."""

    class CountLinesArgs(ToolArgs):
        path: str = Field(description="a file of the repository")

    @tool()
    def count_lines(runner: ToolRunner, args: CountLinesArgs) -> ToolOutcome:
        """Count the lines of a file of the repository."""
        text = runner.cache.host.read_file(args.path, start_line=None, end_line=None, numbered=False)
        return ToolOutcome(f"{args.path}: {len(text.splitlines())} lines")

    yield TOOLS["count_lines"]
    del TOOLS["count_lines"]


def test_a_tool_added_in_one_place_is_offered_validated_dispatched_and_listable(count_lines, runner) -> None:
    assert count_lines.schema == {"name": "count_lines", "description": "Count the lines of a file of the repository.",
                                  "input_schema": {"type": "object", "properties": {"path": {
                                      "type": "string", "description": "a file of the repository"}}, "required": ["path"]}}
    assert tool_schemas(["count_lines"])[0] == count_lines.schema  # the model is offered it
    assert parse_definition(DEFINITION.format(tools="count_lines"), "custom.md").tools == ["read_file", "count_lines"]
    answered = runner(["count_lines"]).run("count_lines", {"path": "app.py"}, 1)
    assert (answered.text, answered.is_error) == ("app.py: 1 lines", False)


def test_arguments_are_checked_against_the_tools_own_model(runner) -> None:
    run = runner(["read_file", "search_code"])
    unknown = run.run("read_file", {"path": "app.py", "lines": "1-3"}, 1)
    assert unknown.is_error and unknown.text.startswith("bad arguments for read_file: lines: Extra inputs are not permitted")
    short = run.run("search_code", {"query": "x"}, 2)
    assert short.is_error and "query: String should have at least 2 characters" in short.text
    below = run.run("read_file", {"path": "app.py", "start_line": 0}, 3)
    assert below.is_error and "start_line: Input should be greater than or equal to 1" in below.text
    assert [c.ok for c in run.calls] == [False, False, False]  # metered like any call


def test_a_custom_agent_may_list_run_test_and_is_offered_it_only_where_the_night_can_run_tests() -> None:
    definition = parse_definition(DEFINITION.format(tools="run_test"), "custom.md")
    assert offered_tools(definition.tools, {"tests"}) == ["read_file", "run_test"]
    assert offered_tools(definition.tools, set()) == ["read_file"]
    with pytest.raises(AgentDefinitionError, match=r"unknown tools \['run_tests'\]; known: \['read_file', .*'run_test'\]"):
        parse_definition(DEFINITION.format(tools="run_tests"), "custom.md")


def test_every_tool_has_a_description_and_arguments_a_model_can_read() -> None:
    assert list(TOOLS) == ["read_file", "search_code", "list_directory", "get_error_traces", "recall_context", "run_test"]
    for defined in TOOLS.values():
        assert defined.description and defined.schema["input_schema"]["type"] == "object"
        assert "additionalProperties" not in defined.schema["input_schema"]
    assert [n for n, t in TOOLS.items() if t.needs] == ["run_test"]


def test_a_tool_without_a_description_or_with_a_taken_name_is_refused() -> None:
    class NoArgs(ToolArgs):
        pass

    def read_file(runner: ToolRunner, args: NoArgs) -> ToolOutcome:
        """A second read_file."""
        return ToolOutcome("")

    def undocumented(runner: ToolRunner, args: NoArgs) -> ToolOutcome:
        return ToolOutcome("")

    for function in (read_file, undocumented):
        with pytest.raises(ValueError, match="a tool needs a docstring"):
            tools.tool()(function)
    assert "undocumented" not in TOOLS


def test_check_warns_about_a_definition_of_ones_own_that_does_not_offer_run_test(tmp_path, monkeypatch) -> None:
    from nightwatch.preflight import _agent

    (tmp_path / "custom.md").write_text(DEFINITION.format(tools="search_code"))
    monkeypatch.setenv("NIGHTWATCH_AGENTS_DIR", str(tmp_path))
    warned = _agent("custom")
    assert warned.state == "warning" and "without run_test" in warned.detail
    assert _agent("custom", verifying=False).state == "ok" and _agent("base-analyzer").state == "ok"
