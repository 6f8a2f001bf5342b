"""A document from a JSON Schema alone: what a model that knows nothing but the tool's schema would send.

`fill(schema)` gives the smallest document the schema allows: required properties only, the first
`enum` value or the `const`, strings of `minLength` characters, numbers at their `minimum`, arrays of
`minItems` items, the first branch of `anyOf`/`oneOf`, every branch of `allOf` merged. With
`optional=True` every declared property is filled too and arrays get at least one item, so nested
schemas are exercised. With `prefer="last"` a choice takes the other end: the last `enum` value and
`true` for booleans (a model that says yes, the most serious answer, "unknown"). It knows nothing of NightWatch.
"""

from __future__ import annotations

from typing import Any

FILLER = "x"
PREFERENCES = ("first", "last")


def fill(schema: Any, *, optional: bool = False, root: dict[str, Any] | None = None, prefer: str = "first") -> Any:
    if prefer not in PREFERENCES:
        raise ValueError(f"prefer must be one of {PREFERENCES}, not {prefer!r}")
    root = schema if root is None and isinstance(schema, dict) else root
    if not isinstance(schema, dict):  # a boolean schema: `true` accepts anything
        return None
    if "$ref" in schema:
        return fill(_resolve(schema["$ref"], root or {}), optional=optional, root=root, prefer=prefer)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][-1 if prefer == "last" else 0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return fill(schema[key][0], optional=optional, root=root, prefer=prefer)
    if schema.get("allOf"):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = _merge(merged, part)
        return fill(merged, optional=optional, root=root, prefer=prefer)
    return _by_type(schema, _type_of(schema), optional, root, prefer)


def _type_of(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None and ("properties" in schema or "required" in schema):
        return "object"
    if kind is None and ("items" in schema or "prefixItems" in schema):
        return "array"
    return kind


def _by_type(schema: dict[str, Any], kind: str | None, optional: bool, root: dict[str, Any] | None, prefer: str) -> Any:
    if kind == "object":
        properties = schema.get("properties", {})
        names = list(properties) if optional else []
        names += [n for n in schema.get("required", []) if n not in names]
        return {n: fill(properties.get(n, {}), optional=optional, root=root, prefer=prefer) for n in names}
    if kind == "array":
        prefix = [fill(s, optional=optional, root=root, prefer=prefer) for s in schema.get("prefixItems", [])]
        count = max(schema.get("minItems", 0), 1 if optional else 0, len(prefix)) - len(prefix)
        return prefix + [fill(schema.get("items", {}), optional=optional, root=root, prefer=prefer) for _ in range(count)]
    if kind == "string":
        return FILLER * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return prefer == "last"
    return None  # "null", or an empty schema that accepts anything


def _number(schema: dict[str, Any], kind: str) -> int | float:
    value: int | float = 0
    if "minimum" in schema:
        value = schema["minimum"]
    elif "exclusiveMinimum" in schema:
        value = schema["exclusiveMinimum"] + (1 if kind == "integer" else 0.5)
    elif "maximum" in schema:
        value = min(0, schema["maximum"])
    elif "exclusiveMaximum" in schema:
        value = min(0, schema["exclusiveMaximum"] - 1)
    return int(value) if kind == "integer" else value


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"only local references can be filled: {ref}")
    node: Any = root
    for part in ref.lstrip("#").strip("/").split("/") if ref != "#" else []:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _merge(left: dict[str, Any], right: Any) -> dict[str, Any]:
    if not isinstance(right, dict):
        return left
    merged = {**left, **{k: v for k, v in right.items() if k not in ("properties", "required")}}
    merged["properties"] = {**left.get("properties", {}), **right.get("properties", {})}
    merged["required"] = [*left.get("required", []), *[r for r in right.get("required", []) if r not in left.get("required", [])]]
    if not merged["properties"]:
        merged.pop("properties")
    if not merged["required"]:
        merged.pop("required")
    return merged
