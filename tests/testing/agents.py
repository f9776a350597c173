"""Agents for the stress tests: a healthy one and deliberately broken ones (scripted model)."""

from __future__ import annotations

from typing import Any

import trio

import pi_trio as pt

from ..support import make_agent

SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


async def nap(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent("rested")])


async def stubborn(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    """Swallows the abort: shields itself and keeps working for 2 s, then returns normally."""
    try:
        await trio.sleep(params["s"])
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            await trio.sleep(2)
        return pt.ToolResult([pt.TextContent("finished anyway")])
    return pt.ToolResult([pt.TextContent("rested")])


async def _linger() -> None:
    await trio.sleep(5)


async def leaky(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    """Starts a task nobody waits for (a system task: it outlives the run)."""
    trio.lowlevel.spawn_system_task(_linger)
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent("rested")])


def script(turns: int = 3, calls: int = 2) -> list[pt.AssistantMessage]:
    answers = [
        pt.faux.assistant_message(
            [pt.faux.text(f"Turn {turn}, calling tools.")]
            + [
                pt.faux.tool_call("work", {"s": 0.5 + c}, id=f"call_{turn}_{c}")
                for c in range(calls)
            ]
        )
        for turn in range(turns)
    ]
    return [*answers, pt.faux.assistant_message("All done now.")]


def agent_with(execute: Any, **options: Any) -> pt.Agent:
    tool = pt.AgentTool("work", "Work", "works for `s` seconds", SCHEMA, execute)
    return make_agent(script(), [tool], token_delay=0.1, **options)


def healthy_agent() -> pt.Agent:
    return agent_with(nap)


def stubborn_agent() -> pt.Agent:
    return agent_with(stubborn)


def leaky_agent() -> pt.Agent:
    return agent_with(leaky)


def careless_listener_agent() -> pt.Agent:
    """A listener that assumes every finished assistant message has content (aborted: none)."""
    agent = agent_with(nap)

    def on_event(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.AssistantMessage):
            event.message.content[0]  # IndexError on an aborted message with no content

    agent.subscribe(on_event)
    return agent
