"""A step's task takes its arguments as they are: Prefect does not walk into them (tasks._prefect.StepTask)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from nightwatch.tasks._prefect import nightwatch_task
from prefect import flow
from prefect.states import Completed

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]


@dataclass
class Error:
    error_class: str
    transaction: str
    nested: list


KEYED: list[str] = []


def _key(_context, parameters) -> str:
    KEYED.append(type(parameters["error"]).__name__)
    return f"look-{parameters['error'].error_class}-{len(KEYED)}"


@nightwatch_task(name="look", step="9", cache_key_fn=_key)
def look(error: Error, extra: list) -> tuple[str, str, str]:
    from prefect.runtime import task_run

    return type(error).__name__, type(error.nested[0]).__name__, type(extra[0]).__name__ + "|" + task_run.name


def test_arguments_reach_the_function_cache_key_and_run_name_plain_and_are_not_walked():
    # A State nested in an argument is what Prefect's walk would replace with its result; a step's arguments are
    # values, so it must arrive untouched: proof that Prefect did not walk into the argument.
    @flow
    def night() -> list:
        error = Error("NoMethodError", "Controller/orders/show", [Completed(data=1)])
        called = look(error, [Completed(data=2)])
        submitted = look.submit(error, extra=[Completed(data=3)]).result()
        return [called, submitted]

    KEYED.clear()
    for error_type, nested, extra in night():
        assert (error_type, nested) == ("Error", "State")
        assert extra == "State|9 look · NoMethodError orders#show"
    assert KEYED == ["Error", "Error"]


def test_with_options_keeps_the_behaviour():
    quick = look.with_options(retries=0)

    @flow
    def night():
        return quick(Error("KeyError", "Controller/webhooks/stripe", [Completed(data=1)]), [Completed(data=2)])

    assert night()[1:] == ("State", "State|9 look · KeyError webhooks#stripe")
