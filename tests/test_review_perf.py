"""Hostile checks of this round's performance changes (events built without ``__init__``, the
one-listener delivery path, the scope the Agent lends its run, the inlined async tool call)."""

from __future__ import annotations

from typing import Any

import trio

import pi_trio as pt

from .grammar import check_events
from .support import PROMPT, calls, loop_setup

faux = pt.faux

SCRIPT = [calls(("echo", {"text": "hi"})), faux.assistant_message("all done")]


class _SinkWithAScope:
    """A user's sink that happens to keep a ``cancel_scope`` of its own (a common Trio name):
    it must not become the run's scope. Its send fails once the tool call has ended."""

    def __init__(self, scope: trio.CancelScope | None) -> None:
        self.events: list[pt.AgentEvent] = []
        self.cancel_scope = scope

    async def send(self, event: pt.AgentEvent) -> None:
        self.events.append(event)
        if event.type == "tool_execution_end":
            raise ValueError("sink fail")


def _shape(messages: list[pt.AgentMessage]) -> list[tuple[str, str | None]]:
    return [(type(m).__name__, getattr(m, "stop_reason", None)) for m in messages]


EXPECTED = [
    ("UserMessage", None),
    ("AssistantMessage", "toolUse"),
    ("ToolResultMessage", None),
    ("AssistantMessage", "error"),
]


async def test_a_failing_sink_with_its_own_entered_scope_cancels_only_the_run(
    autojump_clock: Any,
) -> None:
    ctx, cfg, _, _ = loop_setup(SCRIPT)
    reached = False
    with trio.CancelScope() as outer:
        sink = _SinkWithAScope(outer)
        messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
        await trio.lowlevel.checkpoint()  # the caller's scope is not cancelled
        reached = True
    assert reached and not outer.cancel_called
    assert _shape(messages) == EXPECTED
    check_events(sink.events)


async def test_a_failing_sink_with_a_fresh_scope_ends_the_run_in_error(autojump_clock: Any) -> None:
    ctx, cfg, _, _ = loop_setup(SCRIPT)
    sink = _SinkWithAScope(trio.CancelScope())
    messages = await pt.run_agent_loop(PROMPT, ctx, cfg, sink)  # returns: no ValueError
    assert _shape(messages) == EXPECTED
    assert messages[-1].error_message == "ValueError: sink fail"  # type: ignore[union-attr]
    check_events(sink.events)


class _SinkWithCommonNames:
    """A user's sink whose other attributes happen to be named ``deliver`` and ``closing``
    (pt.Agent's sink extends the protocol under private names, so these are just data)."""

    def __init__(self) -> None:
        self.events: list[pt.AgentEvent] = []
        self.deliver = "by hand"
        self.closing = False

    async def send(self, event: pt.AgentEvent) -> None:
        self.events.append(event)


async def test_a_sink_with_a_deliver_and_a_closing_attribute_is_sent_to_and_closed(
    autojump_clock: Any,
) -> None:
    ctx, cfg, _, _ = loop_setup([calls(("sleep", {"s": 10_000})), *SCRIPT])
    sink = _SinkWithCommonNames()
    with trio.move_on_after(1):  # aborted while the tool sleeps: the close-out runs
        await pt.run_agent_loop(PROMPT, ctx, cfg, sink)
    check_events(sink.events)
    assert sink.events[-1].type == "agent_end"
    assert ctx.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert (sink.deliver, sink.closing) == ("by hand", False)
