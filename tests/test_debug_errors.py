"""Failures you can debug: what the model is told about an exception, and the exception itself
on the events and the agent's state (never in pi's JSON)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio._callbacks import exception_text
from tests.support import ECHO, calls, faux, make_agent, record


class Custom(Exception):
    pass


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (Exception("boom"), "boom"),  # pi's fixtures: a plain error is its message
        (RuntimeError("boom"), "boom"),
        (KeyError("missing"), "KeyError: 'missing'"),
        (_raised(ZeroDivisionError("division by zero")), "ZeroDivisionError: division by zero"),
        (ValueError("bad value"), "ValueError: bad value"),
        (TypeError("f() takes 1 argument"), "TypeError: f() takes 1 argument"),
        (IndexError("list index out of range"), "IndexError: list index out of range"),
        (
            AttributeError("'NoneType' object has no attribute 'x'"),
            "AttributeError: 'NoneType' object has no attribute 'x'",
        ),
        (
            FileNotFoundError(2, "No such file or directory"),
            "FileNotFoundError: [Errno 2] No such file or directory",
        ),
        (Custom("it broke"), "Custom: it broke"),
        (Exception(), "Exception"),  # no text: the type
        (RuntimeError(""), "RuntimeError"),
        (TimeoutError(), "TimeoutError"),
        (trio.TooSlowError(), "TooSlowError"),
        (KeyError(), "KeyError"),
        (
            pt.ToolArgumentError("Validation failed for tool echo"),
            "Validation failed for tool echo",
        ),
        (
            pt.ProviderError("HTTP 429 Too Many Requests", kind="rate_limit"),
            "HTTP 429 Too Many Requests",
        ),
    ],
)
def test_exception_text(exc: BaseException, text: str) -> None:
    assert exception_text(exc) == text


async def _missing(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return {}["missing"]  # type: ignore[no-any-return]


LOOKUP = pt.AgentTool("lookup", "Lookup", "fails", {"type": "object"}, _missing)


async def test_a_failing_tool_names_its_exception_and_carries_it_on_the_event() -> None:
    agent = make_agent([calls(("lookup", {})), faux.assistant_message("done")], [LOOKUP, ECHO])
    events = record(agent)
    await agent.prompt("go")
    [end] = [e for e in events if isinstance(e, pt.ToolExecutionEnd)]
    assert end.is_error
    assert end.result.content == [pt.TextContent("KeyError: 'missing'")]
    assert isinstance(end.error, KeyError) and end.error.args == ("missing",)
    assert end.error.__traceback__ is not None  # where it happened, for the application
    assert "error" not in pt.to_json(end)  # pi's JSON is unchanged
    result = agent.state.messages[2]
    assert isinstance(result, pt.ToolResultMessage)
    assert result.content == [pt.TextContent("KeyError: 'missing'")]
    assert agent.state.error is None  # the run itself went on and ended normally


async def test_a_raising_hook_is_on_the_event_too() -> None:
    def before(context: pt.BeforeToolCallContext) -> None:
        raise ZeroDivisionError("division by zero")

    agent = make_agent(
        [calls(("echo", {"text": "x"})), faux.assistant_message("done")], before_tool_call=before
    )
    events = record(agent)
    await agent.prompt("go")
    [end] = [e for e in events if isinstance(e, pt.ToolExecutionEnd)]
    assert isinstance(end.error, ZeroDivisionError)
    assert end.result.content == [pt.TextContent("ZeroDivisionError: division by zero")]


async def test_a_tool_error_result_without_exception_has_no_error() -> None:
    agent = make_agent([calls(("nope", {})), faux.assistant_message("done")])
    events = record(agent)
    await agent.prompt("go")
    [end] = [e for e in events if isinstance(e, pt.ToolExecutionEnd)]
    assert end.is_error and end.error is None


async def test_a_listener_failure_is_the_runs_error() -> None:
    agent = make_agent([faux.assistant_message("hello")])
    events = record(agent)

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.AssistantMessage):
            raise KeyError("nokey")

    agent.subscribe(listener)
    await agent.prompt("go")
    assert agent.state.error_message == "KeyError: 'nokey'"
    assert isinstance(agent.state.error, KeyError)
    assert agent.state.provider_error is None
    [end] = [e for e in events if isinstance(e, pt.AgentEnd)]
    assert end.error is agent.state.error
    assert "error" not in pt.to_json(end)


async def test_a_raising_stream_function_is_the_runs_error() -> None:
    @asynccontextmanager
    async def stream_fn(model: Any, context: Any, options: Any) -> AsyncIterator[Any]:
        raise ValueError("no such model")
        yield  # pragma: no cover

    state = pt.AgentState(model=pt.get_model("faux", "faux-1"))
    agent = pt.Agent(state, stream_fn=stream_fn)
    events = record(agent)
    await agent.prompt("go")
    assert agent.state.error_message == "ValueError: no such model"
    assert isinstance(agent.state.error, ValueError)
    [end] = [e for e in events if isinstance(e, pt.AgentEnd)]
    assert end.error is agent.state.error
    await agent.prompt("again")  # a new run forgets the last one's error
    assert isinstance(agent.state.error, ValueError)  # (it failed again the same way)
    agent.reset()
    assert agent.state.error is None


async def test_a_normal_or_aborted_run_has_no_error() -> None:
    agent = make_agent([faux.assistant_message("hello")])
    events = record(agent)
    await agent.prompt("go")
    assert agent.state.error is None
    assert [e.error for e in events if isinstance(e, pt.AgentEnd)] == [None]


def test_provider_error_pickles_and_reprs() -> None:
    import pickle

    error = pt.ProviderError(
        "HTTP 429", kind="rate_limit", status=429, retryable=True, retry_after=2.0, url="u"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is pt.ProviderError and copy.fields() == error.fields()
    assert str(copy) == "HTTP 429"
    assert repr(error).startswith("ProviderError('HTTP 429', kind='rate_limit', status=429")
