"""The ``pi_trio`` loggers: each failure logged once, with its traceback, at the level its
consequence deserves; retries and timeouts at INFO; nothing per delta."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import pi_trio as pt
from tests.support import ECHO, calls, faux, make_agent

pytestmark = pytest.mark.filterwarnings("ignore")


def ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("pi_trio")]


def failures(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, type[BaseException]]]:
    """(logger, level, exception type) of each record with a traceback."""
    return [
        (r.name, r.levelno, r.exc_info[0]) for r in ours(caplog) if r.exc_info and r.exc_info[0]
    ]  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _everything(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


async def _missing(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return {}["missing"]  # type: ignore[no-any-return]


LOOKUP = pt.AgentTool("lookup", "Lookup", "fails", {"type": "object"}, _missing)


async def _slow(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(10)
    return pt.ToolResult([pt.TextContent("late")])


SLOW = pt.AgentTool("slow", "Slow", "sleeps", {"type": "object"}, _slow, timeout=1.0)


async def test_a_normal_streamed_run_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    agent = make_agent([faux.assistant_message("x" * 500)])
    await agent.prompt("go")
    assert ours(caplog) == []


async def test_a_failing_tool_is_one_warning_with_traceback(caplog: Any) -> None:
    agent = make_agent([calls(("lookup", {})), faux.assistant_message("done")], [LOOKUP, ECHO])
    await agent.prompt("go")
    assert failures(caplog) == [("pi_trio.tools", logging.WARNING, KeyError)]
    [record] = ours(caplog)
    assert "tool lookup (call call_1) raised; the model sees: KeyError: 'missing'" in (
        record.getMessage()
    )
    assert "_missing" in logging.Formatter().format(record)  # the traceback names the tool


async def test_a_raising_after_tool_call_is_a_warning(caplog: Any) -> None:
    def after(context: pt.AfterToolCallContext) -> None:
        raise ValueError("bad result")

    agent = make_agent(
        [calls(("echo", {"text": "x"})), faux.assistant_message("done")], after_tool_call=after
    )
    await agent.prompt("go")
    assert failures(caplog) == [("pi_trio.tools", logging.WARNING, ValueError)]


async def test_invalid_arguments_are_info_without_traceback(caplog: Any) -> None:
    agent = make_agent([calls(("echo", {"wrong": 1})), faux.assistant_message("done")])
    await agent.prompt("go")
    [record] = ours(caplog)
    assert (record.name, record.levelno, record.exc_info) == ("pi_trio.tools", logging.INFO, None)


async def test_a_tool_timeout_is_info(caplog: Any, autojump_clock: Any) -> None:
    agent = make_agent([calls(("slow", {})), faux.assistant_message("done")], [SLOW])
    await agent.prompt("go")
    [record] = ours(caplog)
    assert (record.name, record.levelno) == ("pi_trio.tools", logging.INFO)
    assert record.getMessage() == "tool slow (call call_1) timed out after 1 s"


async def test_a_raising_hook_ends_the_run_with_one_error(caplog: Any) -> None:
    def stop(context: Any) -> bool:
        raise RuntimeError("hook broke")

    agent = make_agent([faux.assistant_message("hi")], should_stop_after_turn=stop)
    await agent.prompt("go")
    assert failures(caplog) == [("pi_trio.loop", logging.ERROR, RuntimeError)]
    assert agent.state.error_message == "hook broke"


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_raising_listener_is_logged_once(caplog: Any, kind: str) -> None:
    agent = make_agent([faux.assistant_message("hi")])
    raised: list[KeyError] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.TurnEnd) and not raised:
            raised.append(KeyError("nokey"))
            raise raised[0]

    async def async_listener(event: pt.AgentEvent) -> None:
        listener(event)

    agent.subscribe(listener if kind == "sync" else async_listener)
    await agent.prompt("go")
    # the agent logs it; the loop, which it then ends, does not log it again
    assert failures(caplog) == [("pi_trio.agent", logging.ERROR, KeyError)]
    assert ours(caplog)[0].filename == "_delivery.py"  # where it was seen, not the helper


async def test_a_raising_stream_function_is_one_error(caplog: Any) -> None:
    @asynccontextmanager
    async def stream_fn(model: Any, context: Any, options: Any) -> AsyncIterator[Any]:
        raise ConnectionError("dns failure")
        yield  # pragma: no cover

    agent = pt.Agent(pt.AgentState(model=pt.get_model("faux", "faux-1")), stream_fn=stream_fn)
    await agent.prompt("go")
    assert failures(caplog) == [("pi_trio.loop", logging.ERROR, ConnectionError)]


async def test_a_sink_failure_of_a_bare_loop_is_logged(caplog: Any) -> None:
    class Sink:
        async def send(self, event: pt.AgentEvent) -> None:
            if isinstance(event, pt.TurnStart):
                raise OSError("pipe closed")

    model = faux.FauxModel([faux.assistant_message("hi")])
    config = pt.AgentLoopConfig(model=model.model, stream_fn=model)
    await pt.run_agent_loop([pt.UserMessage("go")], pt.AgentContext("", [], []), config, Sink())
    assert failures(caplog) == [("pi_trio.loop", logging.ERROR, OSError)]
