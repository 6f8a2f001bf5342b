"""Tool input schemas from pydantic models: the one place a model becomes a tool's `input_schema`.

Pydantic's JSON Schema names nested models in `$defs` and decorates every schema with a `title`.
The tool schema inlines each `$ref` and drops those `title` annotations, walking the schema by its
keywords, so a key inside `properties` (a property name, e.g. `Analysis.title`) is never mistaken for
a keyword, and data (`default`, `enum`, `const`, `examples`) is copied untouched.

The schema is sent with every request of a conversation, so it says only what the model needs to fill it:
an optional field (`X | None = None`, not in `required`) is described as X alone, since leaving it out
is how the model says "none", and the root model's docstring (written for developers; the tool has
its own description) is left out.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel

# JSON Schema 2020-12 keywords whose value is a subschema, a list of them, or a map of name -> subschema.
_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
              "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with `$defs` inlined and annotation titles dropped (never property names): a copy of
    its own, built once per model (every triage request and every investigation asks for its tool's)."""
    return copy.deepcopy(_input_schema(model))


@functools.cache
def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    schema.pop("description", None)
    return _schema(schema, defs, ())


def model_tool(name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    """A tool definition whose input is validated by `model`."""
    return {"name": name, "description": description, "input_schema": input_schema(model)}


def _schema(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if not isinstance(node, dict):
        return copy.deepcopy(node)  # a boolean schema
    if "$ref" in node:
        name = node["$ref"].split("/")[-1]
        if name in seen:
            raise ValueError(f"recursive model {name!r} cannot be inlined into a tool schema")
        resolved = _schema(defs[name], defs, (*seen, name))
        siblings = _schema({k: v for k, v in node.items() if k != "$ref"}, defs, seen)
        return {**resolved, **siblings}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue  # an annotation of this schema; property names live one level down, in a map
        if key in _SUBSCHEMA:
            out[key] = _schema(value, defs, seen)
        elif key in _SUBSCHEMA_LISTS:
            out[key] = [_schema(v, defs, seen) for v in value]
        elif key in _SUBSCHEMA_MAPS:
            out[key] = {name: _schema(v, defs, seen) for name, v in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    return _optional(out)


def _optional(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, null]` with `default: null` (an optional field) as X with the node's own annotations; any other
    node as it is. A field that must be given, even as null, keeps its null."""
    branches = node.get("anyOf")
    if "default" not in node or node["default"] is not None or not isinstance(branches, list) or len(branches) != 2:
        return node
    kept = [b for b in branches if b != {"type": "null"}]
    if len(kept) != 1 or not isinstance(kept[0], dict):
        return node
    return {**kept[0], **{k: v for k, v in node.items() if k not in ("anyOf", "default")}}
