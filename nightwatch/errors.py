"""Errors a user can act on: the CLI prints their message (no traceback) and exits 2."""

from __future__ import annotations

from nightwatch.agent.definitions import AgentDefinitionError
from nightwatch.ignore import InvalidIgnoreRules
from nightwatch.runtime import ConfigurationError
from nightwatch.sources.base import SourceError

USER_ERRORS: tuple[type[Exception], ...] = (AgentDefinitionError, ConfigurationError, InvalidIgnoreRules, SourceError)
