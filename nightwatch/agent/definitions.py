"""Agent definitions: Markdown files with YAML frontmatter; the body is the system prompt.

Shipped definitions live in `nightwatch/agent/catalog/`; a team adds its own by dropping a file in a
folder named by NIGHTWATCH_AGENTS_DIR. Frontmatter is validated strictly: an unknown or missing field
is an error that names the file and the field, never a silent default.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nightwatch import safe_yaml
from nightwatch.agent.tools import TOOLS

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"


class AgentDefinitionError(Exception):
    """A definition file that cannot be used, with the file and the reason."""


class AgentDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    description: str = Field(min_length=1)
    model: str | None = None
    max_iterations: int | None = Field(default=None, ge=2, le=100)  # None: the settings' (NIGHTWATCH_MAX_ITERATIONS, or the profile's)
    max_tokens: int = Field(default=8192, ge=512, le=64_000)
    thinking_budget: int = Field(default=0, ge=0, le=32_000)
    tools: list[str] = Field(default_factory=lambda: list(TOOLS))  # each offered where the night can (Tool.needs)
    languages: list[str] = Field(default_factory=list)
    system_prompt: str = Field(min_length=20)
    source: str = ""

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools: list[str]) -> list[str]:
        unknown = sorted(set(tools) - set(TOOLS))
        if unknown:
            raise ValueError(f"unknown tools {unknown}; known: {list(TOOLS)}")
        return tools

    @field_validator("thinking_budget")
    @classmethod
    def _thinking_minimum(cls, budget: int) -> int:
        if 0 < budget < 1024:
            raise ValueError("thinking_budget must be 0 (off) or at least 1024 tokens")
        return budget


def parse_definition(text: str, source: str) -> AgentDefinition:
    """The definition in `text` (a file's content; `source` names it in errors). A text read before is not parsed
    again: each investigation reads its agent's file, and a night has dozens."""
    return _parsed(text, source).model_copy(deep=True)


@functools.lru_cache(maxsize=32)
def _parsed(text: str, source: str) -> AgentDefinition:
    if not text.startswith("---"):
        raise AgentDefinitionError(f"{source}: must start with a '---' YAML frontmatter block")
    try:
        _, front, body = text.split("---", 2)
        meta = safe_yaml.safe_load(front) or {}
    except (ValueError, yaml.YAMLError) as exc:
        raise AgentDefinitionError(f"{source}: frontmatter is not valid YAML ({exc})") from exc
    if not isinstance(meta, dict):
        raise AgentDefinitionError(f"{source}: frontmatter must be a mapping of fields")
    if "system_prompt" in meta:
        raise AgentDefinitionError(f"{source}: the system prompt is the Markdown body, not a frontmatter field")
    try:
        return AgentDefinition(**meta, system_prompt=body.strip(), source=source)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'definition'}: {e['msg']}" for e in exc.errors())
        raise AgentDefinitionError(f"{source}: {problems}") from exc


def search_dirs() -> list[Path]:
    extra = os.environ.get("NIGHTWATCH_AGENTS_DIR")
    return ([Path(extra)] if extra else []) + [CATALOG_DIR]


def list_definitions() -> list[AgentDefinition]:
    found: dict[str, AgentDefinition] = {}
    for folder in reversed(search_dirs()):  # a team's folder overrides the shipped catalog
        for path in sorted(folder.glob("*.md")):
            definition = parse_definition(path.read_text(encoding="utf-8"), str(path))
            found[definition.name] = definition
    return sorted(found.values(), key=lambda d: d.name)


def load_definition(name: str) -> AgentDefinition:
    for folder in search_dirs():
        path = folder / f"{name}.md"
        if path.is_file():
            definition = parse_definition(path.read_text(encoding="utf-8"), str(path))
            if definition.name != name:
                raise AgentDefinitionError(f"{path}: name '{definition.name}' does not match the file name")
            return definition
    known = ", ".join(d.name for d in list_definitions())
    raise AgentDefinitionError(f"no agent definition named '{name}' (known: {known})")
