"""A command's options as one object: a dataclass whose fields take their `typer.Option` (or `typer.Argument`) as
default, and a command that receives one instance of it. Typer reads the fields as the command's parameters, so
`--help`, types and defaults are what they would be on a function; the command's body reads `options.<name>`."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

T = TypeVar("T")


def command_options(options_type: type[T]) -> Callable[[Callable[[T], None]], Callable[..., None]]:
    """Decorate `def command(options: options_type)` so Typer sees each field of `options_type` as a parameter."""
    hints = get_type_hints(options_type)
    parameters = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
                  for f in dataclasses.fields(options_type)]  # type: ignore[arg-type]

    def wrap(func: Callable[[T], None]) -> Callable[..., None]:
        def command(**values: Any) -> None:
            return func(options_type(**values))

        command.__name__, command.__qualname__, command.__doc__ = func.__name__, func.__qualname__, func.__doc__
        command.__module__ = func.__module__
        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in parameters}
        return command

    return wrap
