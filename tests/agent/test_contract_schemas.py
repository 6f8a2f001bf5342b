"""Every tool schema NightWatch sends is one the API accepts and one a model can answer from the schema alone.

The tools are collected from the requests the code builds (triage, every agent definition's loop with
its forced final turn and its own summaries) plus every tool of TOOLS, so a new tool is checked without a
change here. A schema that lists a `required` key it does not declare, or an object closed with
`additionalProperties: false` that misses a field of its model, is refused or unanswerable: a model
that fills exactly the schema it is given cannot produce a document the code accepts.
"""

from __future__ import annotations

import copy
import re
import types
import typing
from pathlib import Path
from typing import Any, Callable

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from nightwatch.agent.compaction import SUMMARY_TOOL, summary_text
from nightwatch.agent.definitions import list_definitions
from nightwatch.agent.loop import LoopConfig, run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import SUBMIT_TOOL, TOOLS, CodeCache, ToolRunner
from nightwatch.models import Analysis
from nightwatch.offline.emulated_api import EmulatedMessagesAPI
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext
from nightwatch.triage.verdict import TRIAGE_TOOL, TriageAnswer, parse_answer, triage_params
from tests.agent.test_agent_loop import _case, _repo
from tests.fakes.anthropic import GenericModel
from tests.fakes.schema_fill import fill

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MODELS: dict[str, type[BaseModel]] = {SUBMIT_TOOL: Analysis, TRIAGE_TOOL: TriageAnswer}  # tools whose input a model parses


class Recording:
    """A model client that keeps every request as sent, answered by a model that knows only the schemas."""

    name, offline = "recording", True

    def __init__(self) -> None:
        self.api = EmulatedMessagesAPI(GenericModel())
        self.requests: list[dict[str, Any]] = []

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        return self.api.recorded_as(model, mode)

    def create(self, **params: Any):
        self.requests.append(copy.deepcopy(params))
        return self.api.create(**params)


def _sent_requests(tmp_path: Path) -> list[dict[str, Any]]:
    error, base_runner, _ = _case(tmp_path)
    requests = [triage_params(error, base_runner.traces, [], "claude-haiku-4-5")]
    own_summaries = ContextPolicy(compaction_trigger=1, summary_keep_messages=2, when_it_pays=False)
    at_thresholds = ContextPolicy(when_it_pays=False)  # every edit offered from the first request, paying or not
    for definition in list_definitions():
        for model, iterations, policy in (("claude-sonnet-4-6", 12, None), ("claude-sonnet-4-6", 1, at_thresholds),
                                          ("claude-haiku-4-5", 12, own_summaries)):
            runner = ToolRunner(cache=CodeCache(_repo(tmp_path / f"{definition.name}-{model}-{iterations}")), traces=base_runner.traces,
                                events=EventLog(), run_id="r1", fingerprint=error.fingerprint, allowed=definition.tools)
            config = LoopConfig(model=model, system_prompt=definition.system_prompt, tools=definition.tools,
                                max_iterations=iterations, policy=policy)
            client = Recording()
            run_agent(client, runner, config, investigation_message(error, runner.traces, ResearchContext(fingerprint=error.fingerprint)))
            requests += client.requests
    return requests


@pytest.fixture(scope="module")
def sent(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """Every tool NightWatch offers, by name, as sent (without its cache breakpoint)."""
    tools: dict[str, dict[str, Any]] = {}
    offered = [t for r in _sent_requests(tmp_path_factory.mktemp("contract")) for t in r["tools"]] + [t.schema for t in TOOLS.values()]
    for tool in offered:
        tool = {k: v for k, v in tool.items() if k != "cache_control"}
        assert tools.setdefault(tool["name"], tool) == tool, f"{tool['name']} is sent with two different definitions"
    return tools


def test_the_collection_finds_every_kind_of_tool(sent):
    assert {*TOOLS, SUBMIT_TOOL, TRIAGE_TOOL, SUMMARY_TOOL} <= set(sent)


def test_tool_names_match_the_api_pattern(sent):
    assert [n for n in sent if not TOOL_NAME.match(n)] == []


def test_input_schemas_are_draft_2020_12_objects(sent):
    for name, tool in sent.items():
        Draft202012Validator.check_schema(tool["input_schema"])
        assert tool["input_schema"]["type"] == "object", name


def test_every_required_key_is_declared(sent):
    undeclared = [f"{name}: {where}" for name, tool in sent.items() for where in _undeclared(tool["input_schema"], "input_schema")]
    assert undeclared == []


def test_closed_objects_declare_every_field_of_their_model(sent):
    for name, model in MODELS.items():
        closed = list(_closed_objects(sent[name]["input_schema"], "input_schema"))
        matched = dict(_model_objects(model, sent[name]["input_schema"], "input_schema"))
        assert closed, f"{name}: {model.__name__} forbids extra fields, so its schema should say additionalProperties: false"
        for where, schema in closed:
            assert where in matched, f"{name}: {where} is closed but matches no pydantic model"
            fields = {f.alias or n for n, f in matched[where].model_fields.items()}
            assert set(schema.get("properties", {})) == fields, f"{name}: {where} declares {sorted(schema.get('properties', {}))}, {matched[where].__name__} has {sorted(fields)}"


@pytest.mark.parametrize("optional", [False, True], ids=["required-only", "every-property"])
def test_a_document_from_the_schema_alone_is_accepted(sent, optional):
    for name, tool in sent.items():
        document = fill(tool["input_schema"], optional=optional)
        Draft202012Validator(tool["input_schema"]).validate(document)
        _acceptance(name)(document)


def test_every_tool_has_a_parser_to_check_against(sent):
    assert [n for n in sent if n not in MODELS and n != SUMMARY_TOOL and n not in TOOLS] == []


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}, "n": {"type": "integer", "exclusiveMinimum": 3}},
     "required": ["q", "n"], "additionalProperties": False},
    {"type": "object", "properties": {"xs": {"type": "array", "minItems": 2, "items": {"enum": ["a", "b"]}}}, "required": ["xs"]},
    {"type": "object", "properties": {"v": {"anyOf": [{"type": "number", "minimum": 1.5}, {"type": "null"}]}}, "required": ["v"]},
    {"type": "object", "properties": {"m": {"$ref": "#/$defs/M"}}, "required": ["m"],
     "$defs": {"M": {"type": "object", "properties": {"k": {"const": 7}}, "required": ["k"]}}},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
               {"properties": {"b": {"type": ["null", "string"], "minLength": 1}}, "required": ["b"]}]},
], ids=["bounds", "array-enum", "any-of", "ref", "all-of"])
def test_the_filler_gives_a_valid_document(schema):
    for optional in (False, True):
        Draft202012Validator(schema).validate(fill(schema, optional=optional))


# what the code does with a tool's input ---------------------------------------------------------------
def _acceptance(name: str) -> Callable[[dict], Any]:
    if name == SUBMIT_TOOL:
        return Analysis.model_validate
    if name == TRIAGE_TOOL:
        return lambda doc: parse_answer([{"type": "tool_use", "name": TRIAGE_TOOL, "input": doc}])
    if name == SUMMARY_TOOL:
        return _summary_accepted
    return TOOLS[name].arguments.model_validate  # ToolRunner.run validates the input with the tool's own model


def _summary_accepted(doc: dict) -> None:
    use = types.SimpleNamespace(type="tool_use", name=SUMMARY_TOOL, input=doc)
    assert summary_text(types.SimpleNamespace(content=[use])) is not None, f"{SUMMARY_TOOL}: {doc} gives no summary"


# schema walking ------------------------------------------------------------------------------------------
def _subschemas(schema: dict[str, Any], where: str):
    for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains"):
        if isinstance(schema.get(key), dict):
            yield schema[key], f"{where}.{key}"
    for key in ("allOf", "anyOf", "oneOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key, [])):
            yield sub, f"{where}.{key}.{i}"
    for key in ("properties", "patternProperties", "$defs"):
        for name, sub in schema.get(key, {}).items():
            yield sub, f"{where}.{key}.{name}"


def _undeclared(schema: dict[str, Any], where: str):
    for key in schema.get("required", []):
        if key not in schema.get("properties", {}):
            yield f"{where}: required {key!r} is not in properties"
    for sub, path in _subschemas(schema, where):
        yield from _undeclared(sub, path)


def _closed_objects(schema: dict[str, Any], where: str):
    if schema.get("additionalProperties") is False:
        yield where, schema
    for sub, path in _subschemas(schema, where):
        yield from _closed_objects(sub, path)


def _model_objects(model: type[BaseModel], schema: dict[str, Any], where: str):
    """(path, model) for the model's object schema and, recursively, every nested model's."""
    yield where, model
    for name, field in model.model_fields.items():
        sub = schema.get("properties", {}).get(field.alias or name)
        for nested in _models_in(field.annotation):
            yield from _find_nested(nested, sub, f"{where}.properties.{field.alias or name}")


def _find_nested(model: type[BaseModel], schema: Any, where: str):
    if not isinstance(schema, dict):
        return
    if "properties" in schema:
        yield from _model_objects(model, schema, where)
    for sub, path in _subschemas({k: v for k, v in schema.items() if k != "properties"}, where):
        yield from _find_nested(model, sub, path)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
