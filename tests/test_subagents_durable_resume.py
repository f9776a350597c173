"""A durable child (``store.open_agent`` from the factory) on a real SQLite file: its session is
logged as it runs, an abort of the parent closes it in pi's aborted shape, and a re-run of the
call (what resuming the parent does) goes on from where the child's session stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

import pi_trio as pt
from pi_trio.subagents import RESUME_TEXT

from .support import ECHO, SLEEP, TOOL_ABORTED_TEXT, assert_aborted, calls, faux, tool_results


def durable_tool(store: Any, child_model: faux.FauxModel) -> pt.AgentTool:
    def child(tool_call_id: str, params: Any) -> Any:
        state = pt.AgentState(model=child_model.model, tools=[SLEEP, ECHO])
        return store.open_agent(f"p/{tool_call_id}", initial_state=state, stream_fn=child_model)

    return pt.subagent_tool("research", "Researches", child)


async def run_parent(store: Any, child_model: faux.FauxModel) -> pt.Agent:
    parent_model = faux.FauxModel(
        [calls(("research", {"task": "find"})), faux.assistant_message("ok")]
    )
    state = pt.AgentState(model=parent_model.model, tools=[durable_tool(store, child_model)])
    parent = pt.Agent(state, stream_fn=parent_model)
    await parent.prompt("go")
    return parent


async def child_messages(store: Any) -> list[pt.AgentMessage]:
    async with store.open_agent("p/call_1", create=False) as child:
        return list(child.state.messages)


async def test_an_abort_closes_the_durable_child_s_session_in_the_aborted_shape(
    tmp_path: Path,
) -> None:
    child_model = faux.FauxModel([calls(("sleep", {"s": 100}))])
    async with pt.open_session_store(str(tmp_path / "a.db")) as store:
        parent_model = faux.FauxModel([calls(("research", {"task": "find"}))])
        tool = durable_tool(store, child_model)
        parent = pt.Agent(
            pt.AgentState(model=parent_model.model, tools=[tool]), stream_fn=parent_model
        )
        sleeping = trio.Event()

        def watch(event: pt.AgentEvent) -> None:
            if not isinstance(event, pt.ToolExecutionUpdate):
                return
            if event.partial_result.details["subagent"]["event"]["type"] == "tool_execution_start":
                sleeping.set()

        parent.subscribe(watch)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(parent.prompt, "go")
            await sleeping.wait()  # the child is in its sleep call
            parent.abort()
        assert_aborted(parent)
        assert tool_results(parent.state.messages) == [("call_1", TOOL_ABORTED_TEXT, True)]
        logged = await child_messages(store)
    last = logged[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"
    assert tool_results(logged) == [("call_1", TOOL_ABORTED_TEXT, True)]


async def test_a_child_that_had_answered_gives_its_answer_again_without_a_model_call(
    tmp_path: Path,
) -> None:
    async with pt.open_session_store(str(tmp_path / "a.db")) as store:
        answered = [pt.UserMessage("find"), faux.assistant_message("found it")]
        state = pt.AgentState(messages=answered)
        async with store.open_agent("p/call_1", initial_state=state):
            pass  # the child finished; the parent's log never got the result
        child_model = faux.FauxModel([])
        parent = await run_parent(store, child_model)
    assert tool_results(parent.state.messages) == [("call_1", "found it", False)]
    assert child_model.calls == []


async def test_a_child_interrupted_mid_answer_is_prompted_to_continue(tmp_path: Path) -> None:
    async with pt.open_session_store(str(tmp_path / "a.db")) as store:
        cut = faux.assistant_message(
            "half", stop_reason="aborted", error_message="Request was aborted"
        )
        state = pt.AgentState(messages=[pt.UserMessage("find"), cut])
        async with store.open_agent("p/call_1", initial_state=state):
            pass
        child_model = faux.FauxModel([faux.assistant_message("whole answer")])
        parent = await run_parent(store, child_model)
        logged = await child_messages(store)
    assert tool_results(parent.state.messages) == [("call_1", "whole answer", False)]
    assert [m.content for m in logged if isinstance(m, pt.UserMessage)][-1] == [
        pt.TextContent(RESUME_TEXT)
    ]


async def test_a_child_with_a_tool_result_tail_is_continued(tmp_path: Path) -> None:
    async with pt.open_session_store(str(tmp_path / "a.db")) as store:
        call = faux.assistant_message([faux.tool_call("echo", {"text": "x"}, id="c1")])
        result = pt.ToolResultMessage("c1", "echo", [pt.TextContent("x")])
        state = pt.AgentState(messages=[pt.UserMessage("find"), call, result])
        async with store.open_agent("p/call_1", initial_state=state):
            pass
        child_model = faux.FauxModel([faux.assistant_message("after x")])
        parent = await run_parent(store, child_model)
    assert tool_results(parent.state.messages) == [("call_1", "after x", False)]
    (request,) = child_model.calls
    assert request.context.messages[-1].role == "toolResult"  # continued, no new prompt


async def test_a_continued_child_s_updates_count_what_it_spent_before_the_re_run(
    tmp_path: Path,
) -> None:
    async with pt.open_session_store(str(tmp_path / "a.db")) as store:
        call = faux.assistant_message([faux.tool_call("echo", {"text": "x"}, id="c1")])
        call.usage = pt.Usage(total_tokens=20)  # spent before the parent's process died
        result = pt.ToolResultMessage("c1", "echo", [pt.TextContent("x")])
        state = pt.AgentState(messages=[pt.UserMessage("find"), call, result])
        async with store.open_agent("p/call_1", initial_state=state):
            pass
        answer = faux.assistant_message("after x", usage=pt.Usage(total_tokens=30))
        parent_model = faux.FauxModel(
            [calls(("research", {"task": "find"})), faux.assistant_message("ok")]
        )
        tool = durable_tool(store, faux.FauxModel([answer]))
        parent = pt.Agent(
            pt.AgentState(model=parent_model.model, tools=[tool]), stream_fn=parent_model
        )
        updates = [
            event.partial_result.usage.total_tokens
            for event in await _recorded(parent)
            if isinstance(event, pt.ToolExecutionUpdate) and event.partial_result.usage is not None
        ]
    assert updates == [50]  # the answer's 30 on top of the 20 in the child's transcript
    (message,) = [m for m in parent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert message.usage is not None and message.usage.total_tokens == 50


async def _recorded(parent: pt.Agent) -> list[pt.AgentEvent]:
    events: list[pt.AgentEvent] = []
    parent.subscribe(events.append)
    await parent.prompt("go")
    return events
