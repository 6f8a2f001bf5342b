import pytest

from nightwatch.agent.definitions import AgentDefinitionError, list_definitions, load_definition, parse_definition


def test_shipped_definitions_load():
    names = {d.name for d in list_definitions()}
    assert {"base-analyzer", "ruby-rails", "python"} <= names
    assert "submit_analysis" in load_definition("base-analyzer").system_prompt


def _doc(front: str) -> str:
    return f"---\n{front}\n---\nYou are a test agent with a long enough system prompt.\n"


def test_unknown_field_is_named():
    with pytest.raises(AgentDefinitionError, match="colour"):
        parse_definition(_doc("name: x\ndescription: d\ncolour: red"), "x.md")


def test_missing_field_is_named():
    with pytest.raises(AgentDefinitionError, match="description"):
        parse_definition(_doc("name: x"), "x.md")


def test_unknown_tool_is_named():
    with pytest.raises(AgentDefinitionError, match="delete_repo"):
        parse_definition(_doc("name: x\ndescription: d\ntools: [read_file, delete_repo]"), "x.md")


def test_unknown_agent_lists_known_ones():
    with pytest.raises(AgentDefinitionError, match="base-analyzer"):
        load_definition("nope")


def test_team_folder_overrides(tmp_path, monkeypatch):
    (tmp_path / "base-analyzer.md").write_text(_doc("name: base-analyzer\ndescription: ours\nmax_iterations: 5"))
    monkeypatch.setenv("NIGHTWATCH_AGENTS_DIR", str(tmp_path))
    assert load_definition("base-analyzer").max_iterations == 5
