"""A model becomes a tool's input schema: nested models inlined, and only what a model needs to fill it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from nightwatch.agent.tool_schema import input_schema


class Place(BaseModel):
    """A place in the repository."""

    file: str
    line: int | None = Field(default=None, ge=1, description="1-based, when known.")


class Answer(BaseModel):
    """Developers' notes on the answer: not for the model."""

    where: Place | None = Field(default=None, description="Where it happened.")
    said: str | None = Field(description="What the user said, null when nothing: must be given.")
    places: list[Place] = Field(default_factory=list)


def test_an_optional_field_is_its_type_alone_and_a_nullable_required_one_keeps_null() -> None:
    schema = input_schema(Answer)
    assert schema["required"] == ["said"]
    assert schema["properties"]["where"] == {
        "type": "object", "description": "Where it happened.", "required": ["file"],
        "properties": {"file": {"type": "string"}, "line": {"type": "integer", "minimum": 1, "description": "1-based, when known."}},
    }
    assert schema["properties"]["said"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert schema["properties"]["places"]["items"]["properties"]["line"] == schema["properties"]["where"]["properties"]["line"]


def test_the_root_docstring_is_left_out_and_nested_ones_kept() -> None:
    schema = input_schema(Answer)
    assert "description" not in schema
    assert schema["properties"]["places"]["items"]["description"] == "A place in the repository."
