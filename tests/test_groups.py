"""No exception group reaches a caller: ``pi_trio._groups`` turns a nursery's group back into
the one exception it stands for, and a group from a tool's, a stream's or a hook's own nursery
comes out of ``prompt()`` plain."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio._groups import must_propagate, only_cancelled, plain_exception

from .support import escaped_from_prompt, faux, make_agent, sleeps


async def _cancelled() -> trio.Cancelled:
    """A real ``Cancelled``, as Trio raises it (its constructor is not public)."""
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as exc:
            return exc
    raise AssertionError("not cancelled")


async def test_only_cancelled_is_the_first_leaf_depth_first() -> None:
    a, b, c = await _cancelled(), await _cancelled(), await _cancelled()
    assert only_cancelled(BaseExceptionGroup("", [a, b])) is a
    # depth first: the nested group's leaf comes before the later sibling
    assert only_cancelled(BaseExceptionGroup("", [BaseExceptionGroup("", [b]), a, c])) is b
    assert only_cancelled(BaseExceptionGroup("", [BaseExceptionGroup("", [c, a])])) is c


async def test_anything_but_cancelled_means_none() -> None:
    a = await _cancelled()
    error = ValueError("boom")
    assert only_cancelled(BaseExceptionGroup("", [a, error])) is None
    assert only_cancelled(BaseExceptionGroup("", [error, a])) is None
    nested = BaseExceptionGroup("", [a, BaseExceptionGroup("", [a, KeyboardInterrupt()])])
    assert only_cancelled(nested) is None


async def test_plain_exception_prefers_an_interrupt_then_cancelled_then_the_first_error() -> None:
    a = await _cancelled()
    interrupt = KeyboardInterrupt()
    assert plain_exception(BaseExceptionGroup("", [a, a])) is a
    assert plain_exception(BaseExceptionGroup("", [a, interrupt])) is interrupt
    inner = BaseExceptionGroup("", [interrupt])
    assert plain_exception(BaseExceptionGroup("", [a, inner])) is interrupt
    error, other = ValueError("cleanup"), OSError("reset")
    assert plain_exception(BaseExceptionGroup("", [error, interrupt])) is interrupt
    assert plain_exception(BaseExceptionGroup("", [error, BaseExceptionGroup("", [a])])) is a
    assert plain_exception(ExceptionGroup("", [error, other])) is error


@pytest.mark.parametrize("kind", ["cancelled", "interrupt", "group", "exit", "error"])
async def test_must_propagate(kind: str) -> None:
    a = await _cancelled()
    exc: BaseException = {
        "cancelled": a,
        "interrupt": KeyboardInterrupt(),
        "group": BaseExceptionGroup("", [ValueError(), a]),
        "exit": SystemExit(1),
        "error": ValueError(),
    }[kind]
    assert must_propagate(exc) is (kind in ("cancelled", "interrupt", "group"))


# --- groups from real nested nurseries ------------------------------------------------------


async def _nested_nursery_group(interrupt: bool) -> BaseExceptionGroup[BaseException]:
    """What two levels of nurseries raise when an outer scope is cancelled while they run
    (and, with ``interrupt``, one inner task raises KeyboardInterrupt as it is cancelled)."""

    async def inner_task(raises: bool) -> None:
        try:
            await trio.sleep_forever()
        finally:
            if raises:
                raise KeyboardInterrupt

    async def middle(raises: bool) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(inner_task, False)
            nursery.start_soon(inner_task, raises)

    with trio.CancelScope() as scope:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(middle, False)
                nursery.start_soon(middle, interrupt)
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
        except BaseExceptionGroup as group:
            return group
    raise AssertionError("no group")


async def test_a_keyboard_interrupt_two_nurseries_down_is_not_taken_for_a_cancellation() -> None:
    group = await _nested_nursery_group(interrupt=True)
    assert only_cancelled(group) is None
    assert isinstance(plain_exception(group), KeyboardInterrupt)


async def test_a_cancellation_two_nurseries_down_is_one_plain_cancelled() -> None:
    group = await _nested_nursery_group(interrupt=False)
    cancelled = only_cancelled(group)
    assert isinstance(cancelled, trio.Cancelled)
    assert plain_exception(group) is cancelled


# --- a tool's, a stream's or a hook's own nursery: its group never reaches the caller -----


async def _nursery_tool(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    """A tool with a nursery of its own: a cancellation from outside comes out of it as a
    group of ``Cancelled`` (strict exception groups), a child's KeyboardInterrupt as a group."""

    async def child() -> None:
        if params.get("interrupt"):
            raise KeyboardInterrupt
        await trio.sleep(10)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(child)
        nursery.start_soon(child)
    return pt.ToolResult([pt.TextContent("never")])


NURSERY_TOOL = pt.AgentTool("nested", "n", "n", {"type": "object"}, _nursery_tool)


def _nested_calls(count: int, **args: Any) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("nested", dict(args), id=f"c{i}") for i in range(count)]
    )


@pytest.mark.parametrize(("count", "mode"), [(1, "parallel"), (2, "sequential"), (2, "parallel")])
async def test_a_deadline_through_a_tools_nursery_reaches_the_caller_as_a_plain_cancelled(
    count: int, mode: str, autojump_clock: trio.testing.MockClock
) -> None:
    agent = make_agent([_nested_calls(count), faux.assistant_message("x")], [NURSERY_TOOL])
    agent.tool_execution = mode  # type: ignore[assignment]
    assert await escaped_from_prompt(agent) == [trio.Cancelled]  # not a BaseExceptionGroup
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


@pytest.mark.parametrize(("count", "mode"), [(1, "parallel"), (2, "sequential"), (2, "parallel")])
async def test_a_keyboard_interrupt_from_a_tools_nursery_reaches_the_caller_plain(
    count: int, mode: str, autojump_clock: trio.testing.MockClock
) -> None:
    agent = make_agent(
        [_nested_calls(count, interrupt=True), faux.assistant_message("x")], [NURSERY_TOOL]
    )
    agent.tool_execution = mode  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):  # a group would not match
        await agent.prompt("go")
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert agent.state.is_streaming is False


async def test_a_deadline_through_a_stream_fns_nursery_reaches_the_caller_plain(
    autojump_clock: trio.testing.MockClock,
) -> None:
    @asynccontextmanager
    async def streaming(model: pt.Model, context: Any, options: Any) -> AsyncIterator[Any]:
        async def events() -> AsyncGenerator[pt.StreamEvent, None]:
            async with trio.open_nursery() as nursery:  # a keep-alive task, say
                nursery.start_soon(trio.sleep_forever)
                yield pt.StreamStart(pt.AssistantMessage([], model.api, model.provider, model.id))
                await trio.sleep_forever()

        async with aclosing(events()) as stream:
            yield stream

    agent = pt.Agent(pt.AgentState(model=pt.get_model("faux", "faux-1")), stream_fn=streaming)
    assert await escaped_from_prompt(agent) == [trio.Cancelled]
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


async def test_a_hooks_group_with_a_keyboard_interrupt_reaches_the_caller_plain() -> None:
    def before(context: pt.BeforeToolCallContext) -> None:
        raise BaseExceptionGroup("the hook's own nursery", [KeyboardInterrupt()])

    agent = make_agent([sleeps(0), faux.assistant_message("x")], before_tool_call=before)
    with pytest.raises(KeyboardInterrupt):
        await agent.prompt("go")
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
