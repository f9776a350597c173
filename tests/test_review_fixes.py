"""Defects a hostile review found in the changes of 3fd44bc..0d3e6ee, one test each (every one
failed before its fix): settings checked where they are given, at_tool_boundary seeing a steer
at once, hook failures ending the run, TurnUpdate.tools checked, a durable session that a
crash, a NaN or an unencodable result cannot break, and the CLI and docs saying what is true."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.cli import main
from pi_trio.providers import faux

from .sessions._helpers import snapshot, transcript_json
from .transcript import assert_transcript_valid

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}


def _calls(*seconds: float) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.tool_call("work", {"s": s}, id=f"c{i}") for i, s in enumerate(seconds)]
    )


# --- 1. a bad setting wedges the Agent forever ---------------------------------------------------


async def test_a_bad_steering_policy_does_not_wedge_the_agent() -> None:
    scripted = faux.FauxModel([faux.assistant_message("x"), faux.assistant_message("y")])
    agent = pt.Agent(pt.AgentState(model=scripted.model), stream_fn=scripted)
    with pytest.raises(ValueError, match="steering_policy"):
        agent.steering_policy = "sometimes"  # type: ignore[assignment]
    assert agent.steering_policy == "after_batch"  # the refused value was never taken
    await agent.prompt("hi")
    assert not agent.is_running
    await agent.prompt("again")


def test_agent_checks_steering_policy_where_it_is_given() -> None:
    with pytest.raises(ValueError, match="steering_policy"):
        pt.Agent(pt.AgentState(), steering_policy="sometimes")  # type: ignore[arg-type]


# --- 2. at_tool_boundary: a steer queued before a call executes still lets it execute -----------

ran: list[str] = []


async def _side_effect_then_work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    ran.append(tool_call_id)  # a side effect before the first checkpoint (a write, a payment)
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent(f"{tool_call_id} done")])


async def test_a_steer_from_before_tool_call_runs_no_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ran.clear()
    scripted = faux.FauxModel([_calls(1, 1, 1), faux.assistant_message("ok")])
    tool = pt.AgentTool("work", "Work", "works", SCHEMA, _side_effect_then_work)
    agent: pt.Agent

    def before(context: pt.BeforeToolCallContext) -> None:
        if context.tool_call.id == "c0":
            agent.steer("stop, all of it")

    agent = pt.Agent(
        pt.AgentState(model=scripted.model, tools=[tool]),
        stream_fn=scripted,
        steering_policy="at_tool_boundary",
        before_tool_call=before,
    )
    await agent.prompt("go")
    assert_transcript_valid(agent.state.messages)
    assert (
        ran == []
    )  # before the fix: ['c2', 'c1', 'c0'] all executed, though steered before starting


# --- 3. bare loop: a failing wait_for_steering escapes the run -----------------------------------


class _Sink:
    def __init__(self) -> None:
        self.events: list[pt.AgentEvent] = []

    async def send(self, event: pt.AgentEvent) -> None:
        self.events.append(event)


@pytest.mark.parametrize(
    "signal",
    [lambda: (_ for _ in ()).throw(RuntimeError("steering source broke")), lambda: "not an event"],
    ids=["raises", "not-an-event"],
)
async def test_a_failing_steering_signal_ends_the_run_with_an_error(
    autojump_clock: trio.testing.MockClock, signal: Any
) -> None:
    tool = pt.AgentTool("work", "Work", "works", SCHEMA, _side_effect_then_work)
    scripted = faux.FauxModel([_calls(1, 2), faux.assistant_message("ok")])
    context = pt.AgentContext("", [], [tool])
    config = pt.AgentLoopConfig(
        scripted.model,
        stream_fn=scripted,
        steering_policy="at_tool_boundary",
        steering_signal=signal,
    )
    await pt.run_agent_loop([pt.UserMessage("go")], context, config, _Sink())
    last = context.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
    assert_transcript_valid(context.messages)


# --- 4. TurnUpdate(tools=...) takes anything ------------------------------------------------------


async def test_turn_update_tools_is_checked_like_agent_state_tools() -> None:
    with pytest.raises(TypeError, match="AgentTool"):
        pt.TurnUpdate(tools=["work"])  # type: ignore[list-item]


# --- 5. durable sessions: a riding tool-result message a crash does not give back ---------------

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
        db = sqlite3.connect(copy)  # the holder in the copy is a process that is gone
        db.execute("UPDATE pi_trio_sessions SET holder_start = 'gone'")
        db.commit()
        db.close()
        async with (
            pt.open_session_store(copy) as store,
            store.open_agent("s", initial_state=state()) as resumed,
        ):
            assert seen in transcript_json(
                resumed.state.messages
            )  # before the fix: c1 seen 2, logged 1


# --- 6. the CLI, the docs, the tree ---------------------------------------------------------------


def test_proxy_model_error_does_not_offer_what_it_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["proxy", "--token", "t", "--port", "0", "--model", "faux"])
    err = capsys.readouterr().err
    assert not ("or 'faux'" in err and "got 'faux'" in err), err


def test_concepts_does_not_call_at_tool_boundary_unbuilt() -> None:
    text = (ROOT / "docs" / "concepts.md").read_text()
    assert 'Not built yet: `steering_policy="at_tool_boundary"`' not in text


def test_no_wheels_are_committed_at_the_root() -> None:
    assert sorted(p.name for p in ROOT.glob("*.whl")) == []


# --- 7. durable sessions: a tool's NaN makes the session impossible to open ---------------------


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
    ):  # before the fix: SessionLogError ... details.mean: not a JSON number: nan
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
            assert last.stop_reason == "stop", agent.state.error_message  # before the fix: "error"
            raise pt.WireFormatError("the block ended")  # a fixed agent gets here
