"""A tool's result is logged as the run saw it, and one the log cannot hold (a NaN, a tree too
deep for JSON) breaks neither the session nor the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._helpers import gone_holder, snapshot, transcript_json

SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


def _calls(*seconds: float) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("work", {"s": s}, id=f"c{i}") for i, s in enumerate(seconds)]
    )


shared: dict[str, int] = {"count": 0}


async def _shared_details(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["s"])
    shared["count"] += 1  # the other call's result, already logged, changes too
    return pt.ToolResult([pt.TextContent("ok")], details=shared)  # one dict for every call


async def test_a_crash_at_a_tool_result_message_end_gives_back_what_was_seen(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agents.db"
    shared["count"] = 0
    scripted = faux.FauxModel([_calls(0.02, 0.01), faux.assistant_message("done")])
    tool = pt.AgentTool("work", "Work", "works", SCHEMA, _shared_details)
    crashes: list[tuple[Path, Any]] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.ToolResultMessage):
            crashes.append((tmp_path / f"crash-{len(crashes)}.db", pt.to_json(event.message)))
            snapshot(path, crashes[-1][0])

    def state() -> pt.AgentState:
        return pt.AgentState(model=scripted.model, tools=[tool])

    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=state(), stream_fn=scripted) as agent,
    ):
        agent.subscribe(listener)
        await agent.prompt("go")
    assert len(crashes) == 2
    for copy, seen in crashes:
        gone_holder(copy)  # the holder in the copy is a process that is gone
        async with (
            pt.open_session_store(copy) as store,
            store.open_agent("s", initial_state=state()) as resumed,
        ):
            assert seen in transcript_json(resumed.state.messages)


async def _nan_details(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("mean of nothing")], details={"mean": float("nan")})


async def test_a_tool_result_with_nan_does_not_brick_its_session(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    tool = pt.AgentTool("stats", "Stats", "stats", {"type": "object"}, _nan_details)
    script = [
        faux.assistant_message([faux.tool_call("stats", {}, id="c0")]),
        faux.assistant_message("done"),
    ]
    scripted = faux.FauxModel(script)
    async with (
        pt.open_session_store(path) as store,
        store.open_agent(
            "s", initial_state=pt.AgentState(model=scripted.model, tools=[tool]), stream_fn=scripted
        ) as agent,
    ):
        await agent.prompt("go")  # the run itself is fine
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=pt.AgentState(model=scripted.model)) as again,
    ):
        assert len(again.state.messages) == 4


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["k"] = {}
        node = node["k"]
    return root


async def _deep_details(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("a tree")], details=_deep(100))


async def test_one_unencodable_tool_result_does_not_poison_the_agent(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    tool = pt.AgentTool("tree", "Tree", "tree", {"type": "object"}, _deep_details)
    scripted = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("tree", {}, id="c0")]),
            faux.assistant_message("done"),
            faux.assistant_message("a plain answer"),
        ]
    )
    state = pt.AgentState(model=scripted.model, tools=[tool])
    with pytest.raises(pt.WireFormatError):  # today the block's end raises too
        async with (
            pt.open_session_store(path) as store,
            store.open_agent("s", initial_state=state, stream_fn=scripted) as agent,
        ):
            await agent.prompt("go")  # this run may fail: its result cannot be logged
            await agent.prompt("a plain question")
            last = agent.state.messages[-1]
            assert isinstance(last, pt.AssistantMessage)
            assert last.stop_reason == "stop", agent.state.error_message
            raise pt.WireFormatError("the block ended")  # a fixed agent gets here
