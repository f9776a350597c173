"""What a wrong-typed input meets at every public entry: a TypeError naming what was given and
what is accepted, with the agent's state, its queues and a durable session's log unchanged; and
a session's log never holds an entry its reader refuses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import pytest

import pi_trio as pt
import pi_trio.wire
from pi_trio.sessions._entries import ENTRY_KINDS

from .support import ECHO, calls, faux, make_scripted_agent, strip_timestamps

WRONG_PROMPTS = [
    (42, "got 42"),
    (None, "got None"),
    (b"hi", "got a bytes"),
    ({"role": "user", "content": "hi"}, "pt.from_json(data, pt.AgentMessage)"),
    (["hello", "world"], "prompt[0] must be a message"),
    (pt.TextContent("hi"), "prompt must be a message (pt.UserMessage"),  # a block, not a message
    ([pt.UserMessage("ok"), 3], "prompt[1] must be a message"),
]


@pytest.mark.parametrize(("value", "said"), WRONG_PROMPTS)
async def test_a_prompt_that_is_not_a_text_or_messages_is_refused(value: Any, said: str) -> None:
    agent, scripted = make_scripted_agent([faux.assistant_message("never")])
    with pytest.raises(TypeError, match=re.escape(said)):
        await agent.prompt(value)
    assert agent.state.messages == [] and scripted.calls == [] and not agent.is_running


async def test_images_must_be_images() -> None:
    agent = make_scripted_agent([faux.assistant_message("never")])[0]
    with pytest.raises(TypeError, match=r"images\[0\] must be a pt.ImageContent"):
        await agent.prompt("look", images=["photo.png"])  # type: ignore[list-item]
    assert agent.state.messages == []


@pytest.mark.parametrize("method", ["steer", "follow_up"])
@pytest.mark.parametrize("value", [42, None, {"role": "user"}, ["a"]])
def test_a_queued_message_that_is_not_one_is_refused(method: str, value: Any) -> None:
    agent = make_scripted_agent([])[0]
    item = agent.steer("kept")
    with pytest.raises(TypeError, match=rf"{method}\(\) must be a message"):
        getattr(agent, method)(value)
    with pytest.raises(TypeError, match=r"replace_queued\(\) must be a message"):
        agent.replace_queued(item.id, value)
    assert [q.message for q in agent.queued()] == [item.message]


def test_a_transcript_of_things_that_are_not_messages_is_refused() -> None:
    with pytest.raises(TypeError, match=r"messages\[1\] must be a message .* got 'hi'"):
        pt.AgentState(messages=[pt.UserMessage("ok"), "hi"])  # type: ignore[list-item]
    state = pt.AgentState()
    with pytest.raises(TypeError, match="messages must be a list of messages, got 'hi'"):
        state.messages = "hi"  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"messages\[0\] must be a message"):
        state.messages = [{"role": "user", "content": "hi"}]  # type: ignore[list-item]
    assert state.messages == []


async def test_continue_refuses_a_tail_appended_in_place() -> None:
    agent, scripted = make_scripted_agent([faux.assistant_message("never")])
    agent.state.messages.append(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the transcript's last message must be a message"):
        await agent.continue_()
    assert scripted.calls == []


# --- durable sessions ---------------------------------------------------------------------------


@attrs.define
class Note:
    """An application's own message type that no converter knows."""

    role: str = "note"
    text: str = ""


@attrs.define
class Memo:
    """An application's own message type, registered with the default converter."""

    role: str = "memo"
    text: str = ""


pi_trio.wire.register_message_type(Memo)


async def test_a_session_refuses_wrong_input_and_opens_again(tmp_path: Path) -> None:
    scripted = faux.FauxModel([faux.assistant_message("one"), faux.assistant_message("two")])
    state = pt.AgentState(model=scripted.model)
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent("s", initial_state=state, stream_fn=scripted) as agent:
            with pytest.raises(TypeError):
                await agent.prompt(42)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match=r"register_message_type\(Note\)"):
                agent.steer(Note(text="unloggable"))  # type: ignore[arg-type]
            assert agent.queued() == ()
            with pytest.raises(TypeError, match=r"register_message_type\(Note\)"):
                await agent.prompt([Note(text="unloggable"), pt.UserMessage("hi")])  # type: ignore[list-item]
            assert agent.state.messages == [] and agent.queued() == ()
            await agent.prompt([Memo(text="a registered one"), pt.UserMessage("go")])  # type: ignore[list-item]
            live = list(agent.state.messages)
        async with store.open_agent("s", initial_state=state) as again:
            assert strip_timestamps([pt.to_json(m) for m in again.state.messages]) == (
                strip_timestamps([pt.to_json(m) for m in live])
            )
            assert any(isinstance(m, Memo) for m in again.state.messages)


async def _nan_details(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("mean of nothing")], details={"mean": float("nan")})


async def test_every_kind_of_entry_the_writer_makes_is_read_back(tmp_path: Path) -> None:
    stats = pt.AgentTool("stats", "Stats", "stats", {"type": "object"}, _nan_details)
    script = [
        calls(("echo", {"text": "ü ✓ \u2028"}), ("stats", {})),
        faux.assistant_message("done"),
        faux.assistant_message("again"),
        faux.assistant_message("and then"),
        faux.assistant_message("a summary"),
        faux.assistant_message([faux.tool_call("gate", {}, id="g1")]),
        faux.assistant_message("gated"),
    ]
    scripted = faux.FauxModel(script)
    gate = pt.AgentTool(
        "gate", "Gate", "waits for a person", {"type": "object"}, lambda *_: "through",
        requires_approval=True,
    )  # fmt: skip
    state = pt.AgentState(model=scripted.model, tools=[ECHO, stats, gate])
    checked: list[str] = []

    def before(context: pt.BeforeToolCallContext) -> None:
        checked.append(context.tool_call.id)  # an application hook: intents get their own entry

    async with pt.open_session_store(tmp_path / "s.db") as store:
        options: dict[str, Any] = {"stream_fn": scripted, "before_tool_call": before}
        async with store.open_agent("s", initial_state=state, **options) as agent:
            agent.follow_up("dropped")
            agent.clear_follow_up_queue()
            agent.follow_up(Memo(text="a memo to follow up"))  # type: ignore[arg-type]
            await agent.prompt([Memo(text="context"), pt.UserMessage("go")])  # type: ignore[list-item]
            agent.state.messages = agent.state.messages[:2]  # another transcript: logged anew
            await agent.prompt("once more")
            agent.compaction = pt.Compaction(keep_recent_tokens=1)
            assert await agent.compact() is not None  # a compaction entry
            await agent.prompt("through the gate")  # an approval entry
            agent.approve("g1")  # a decision entry
            await agent.continue_()
            live = strip_timestamps([pt.to_json(m) for m in agent.state.messages])
        kinds = {entry.kind for entry in await store.load("s")}
        async with store.open_agent("s", initial_state=state) as again:
            assert strip_timestamps([pt.to_json(m) for m in again.state.messages]) == live
    # an inbox_ignored entry needs PostgreSQL's inbox: tests/sessions/test_serve.py makes one
    assert kinds == ENTRY_KINDS - {"inbox_ignored"}
    assert len(checked) == 3


async def test_a_message_a_hook_adds_that_the_log_cannot_keep_fails_the_run_not_the_session(
    tmp_path: Path,
) -> None:
    def prepare(turn: pt.TurnContext) -> pt.TurnUpdate:
        return pt.TurnUpdate(messages=[Note(text="added by a hook")])  # type: ignore[list-item]

    script = [calls(("echo", {"text": "x"})), faux.assistant_message("never")]
    scripted = faux.FauxModel(script)
    state = pt.AgentState(model=scripted.model, tools=[ECHO])
    async with pt.open_session_store(tmp_path / "s.db") as store:
        options: dict[str, Any] = {"stream_fn": scripted, "prepare_next_turn": prepare}
        async with store.open_agent("s", initial_state=state, **options) as agent:
            await agent.prompt("go")
            assert "register_message_type(Note)" in (agent.state.error_message or "")
            assert any(isinstance(m, Note) for m in agent.state.messages)  # the live transcript
            agent.prepare_next_turn = None
            await agent.prompt("and on")  # a new run logs the transcript anew, without it
        async with store.open_agent("s", initial_state=state) as again:
            kept = [m.role for m in again.state.messages]
    assert "note" not in kept and kept[-2:] == ["user", "assistant"]
