"""Durable agents on a real store (SQLite file; PostgreSQL where ``store_url`` is used): what is
logged when, resume, queues, repair, leases."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._helpers import calls, gone_holder, kinds, make_tool, rows, snapshot, transcript_json
from .conftest import Raw


def _noop(call_id: str, params: Any, on_update: Any) -> str:
    return f"noop {params['n']}"


async def _anoop(call_id: str, params: Any, on_update: Any) -> str:
    await trio.lowlevel.checkpoint()
    return f"anoop {params['n']}"


def _state(scripted: faux.FauxModel, *tools: pt.AgentTool) -> pt.AgentState:
    return pt.AgentState(model=scripted.model, system_prompt="be brief", tools=list(tools))


async def test_a_run_is_logged_entry_by_entry_and_comes_back(store_url: str) -> None:
    path = store_url
    scripted = faux.FauxModel([calls("anoop"), faux.assistant_message("done")])
    tool = make_tool("anoop", _anoop)
    async with pt.open_session_store(path) as store:
        async with store.open_agent(
            "s", initial_state=_state(scripted, tool), stream_fn=scripted
        ) as agent:
            agent.state.thinking_level = "low"
            await agent.prompt("go")
            before = transcript_json(agent.state.messages)
        entries = await store.load("s")
    assert [e.kind for e in entries] == [
        "state", "state", "run_start", "message", "message", "tool_intent", "tool_result",
        "message", "message", "run_end",
    ]  # fmt: skip
    assert [e.seq for e in entries] == list(range(1, 11))
    assert {e.epoch for e in entries} == {1}
    assert entries[1].data["thinkingLevel"] == "low"  # compared at run start
    assert entries[6].data["content"] == [{"type": "text", "text": "anoop 0"}]
    assert [e.data for e in entries if e.kind == "message"] == before  # pi's JSON
    assert entries[-1].data == {"reason": "stop"}

    again = faux.FauxModel([faux.assistant_message("hello again")])
    again_url = path if "://" in path else f"sqlite://{path}"
    async with pt.open_session_store(again_url) as store:
        plain = pt.AgentState(model=again.model, tools=[tool])  # no system prompt given
        async with store.open_agent("s", initial_state=plain, stream_fn=again) as agent:
            assert transcript_json(agent.state.messages) == before
            assert (agent.state.system_prompt, agent.state.thinking_level) == ("be brief", "low")
            await agent.prompt("again?")
            assert again.calls[0].context.system_prompt == "be brief"
            assert len(again.calls[0].context.messages) == len(before) + 1
            assert agent.state.messages[-1].content[0].text == "hello again"  # type: ignore[union-attr]
        assert {e.epoch for e in (await store.load("s"))[10:]} == {2}


async def test_each_thing_is_durable_before_anyone_hears_of_it(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    release = trio.Event()
    seen: list[str] = []

    async def slow(call_id: str, params: Any, on_update: Any) -> str:
        # intent before execute: our own intent is committed when we start
        assert call_id in {d.get("toolCallId") for _, k, d, _ in rows(path) if k == "tool_intent"}
        await release.wait()
        return "slow done"

    async def fast(call_id: str, params: Any, on_update: Any) -> str:
        return "fast done"

    scripted = faux.FauxModel([calls("slow", "fast"), faux.assistant_message("both done")])

    crashes: list[tuple[Path, Any]] = []  # (the disk at a tool result's message_end, its JSON)

    def listener(event: pt.AgentEvent) -> None:
        logged = rows(path)
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.ToolResultMessage):
            # its own entry rides on the next commit: its logged tool_result rebuilds it
            crashes.append((tmp_path / f"crash-{len(crashes)}.db", pt.to_json(event.message)))
            snapshot(path, crashes[-1][0])
            seen.append("message")
        elif isinstance(event, pt.MessageEnd):
            assert pt.to_json(event.message) in [d for _, k, d, _ in logged if k == "message"]
            seen.append("message")
        elif isinstance(event, pt.ToolExecutionEnd):
            results = {d["toolCallId"] for _, k, d, _ in logged if k == "tool_result"}
            assert event.tool_call_id in results
            seen.append(f"result {event.tool_call_id}")
            if event.tool_call_id == "c1":  # the fast one, while the slow one still runs
                assert "c0" not in results
                release.set()

    tools = (make_tool("slow", slow), make_tool("fast", fast))
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=_state(scripted, *tools), stream_fn=scripted) as agent,
    ):
        agent.subscribe(listener)
        await agent.prompt("go")
    assert seen == ["message", "message", "result c1", "result c0", "message", "message", "message"]
    # a crash right after each tool-result message_end: the resumed transcript has it, exactly
    assert len(crashes) == 2
    for copy, message in crashes:
        gone_holder(copy)  # the holder in the copy is a process that is gone
        async with (
            pt.open_session_store(copy) as store,
            store.open_agent("s", initial_state=_state(scripted, *tools)) as agent,
        ):
            assert transcript_json(agent.state.messages).count(message) == 1


async def test_a_tool_result_message_its_entry_would_not_rebuild_is_committed_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the millisecond changes between the tool's end and its entry: the message's timestamp is
    # not the entry's, so the message cannot ride on the next commit
    import pi_trio.tools._batch as batch

    ticks = iter(range(10**12, 10**12 + 1000))
    monkeypatch.setattr(batch, "now_ms", lambda: next(ticks))
    path = tmp_path / "agents.db"
    scripted = faux.FauxModel([calls("anoop"), faux.assistant_message("done")])
    ends: list[bool] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.ToolResultMessage):
            logged = [d for _, k, d, _ in rows(path) if k == "message"]
            ends.append(pt.to_json(event.message) in logged)

    async with (
        pt.open_session_store(path) as store,
        store.open_agent(
            "s", initial_state=_state(scripted, make_tool("anoop", _anoop)), stream_fn=scripted
        ) as agent,
    ):
        agent.subscribe(listener)
        await agent.prompt("go")
    assert ends == [True]


async def test_queues_come_back_and_a_drain_is_logged(store_url: str) -> None:
    path = store_url
    scripted = faux.FauxModel([faux.assistant_message("first"), faux.assistant_message("second")])
    async with pt.open_session_store(path) as store:
        async with store.open_agent("s", initial_state=_state(scripted), stream_fn=scripted) as a:
            a.follow_up("later, please")
            a.steer("dropped")
            a.clear_steering_queue()
            a.steer("kept")
        # the block's end made them durable
        assert kinds(path)[-4:] == ["queued", "queued", "cleared", "queued"]
        async with store.open_agent("s", initial_state=_state(scripted), stream_fn=scripted) as a:
            assert a.has_queued_messages()
            await a.prompt("hi")  # steering "kept" goes in after the first answer...
            texts = [getattr(m, "content", None) for m in a.state.messages]
        async with store.open_agent("s", initial_state=_state(scripted), stream_fn=scripted) as a:
            assert not a.has_queued_messages()  # ...and "later, please" ran as a follow-up
            assert [getattr(m, "content", None) for m in a.state.messages] == texts
    users = [t[0].text for t in texts if isinstance(t, list) and t and hasattr(t[0], "text")]
    assert "kept" in users and "later, please" in users and "dropped" not in users
    assert kinds(path).count("drained") == 2


async def test_replaced_transcript_and_settings_are_logged_at_run_start(store_url: str) -> None:
    path = store_url
    scripted = faux.FauxModel([faux.assistant_message("one"), faux.assistant_message("two")])
    async with pt.open_session_store(path) as store:
        async with store.open_agent("s", initial_state=_state(scripted), stream_fn=scripted) as a:
            await a.prompt("first")
            a.reset()
            a.state.system_prompt = "be verbose"
            await a.prompt("second")
            after = transcript_json(a.state.messages)
        async with store.open_agent("s", initial_state=_state(scripted), stream_fn=scripted) as a:
            assert transcript_json(a.state.messages) == after and len(after) == 2
            assert a.state.system_prompt == "be verbose"
    assert "transcript" in kinds(path)


async def test_waiting_holder_gets_the_session_once_it_is_given_back(store_url: str) -> None:
    scripted = faux.FauxModel([])
    order: list[str] = []
    async with pt.open_session_store(store_url) as store:

        async def second() -> None:
            async with store.open_agent("s", wait=True):
                order.append("second in")

        async with (
            trio.open_nursery() as nursery,
            store.open_agent("s", initial_state=_state(scripted)),
        ):
            with pytest.raises(pt.SessionBusyError, match="is open elsewhere"):
                async with store.open_agent("s"):
                    pass
            nursery.start_soon(second)
            await trio.sleep(0.05)
            order.append("first out")
    assert order == ["first out", "second in"]


async def test_a_holder_that_lost_its_lease_stops_with_a_clear_error(
    store_url: str, raw: Raw
) -> None:
    path = store_url
    scripted = faux.FauxModel([faux.assistant_message("never logged")])
    async with pt.open_session_store(path) as store:
        with pytest.raises(pt.SessionBusyError, match="lost it"):  # and so does the block
            async with store.open_agent(
                "s", initial_state=_state(scripted), stream_fn=scripted
            ) as a:
                raw("UPDATE pi_trio_sessions SET epoch = epoch + 1")
                count = len(rows(path))
                await a.prompt("hello")
                last = a.state.messages[-1]
                assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
                assert "lost it" in (last.error_message or "")
    assert len(rows(path)) == count  # nothing written under the old epoch


async def test_repair_after_a_crash_mid_batch(tmp_path: Path) -> None:
    """A crash while the first of two sequential calls runs: the running one's outcome is
    unknown (replay="never"), the second never started; a replay="safe" tool is re-run."""
    path, crashed = tmp_path / "a.db", tmp_path / "crashed.db"
    effects: list[str] = []

    async def charge(call_id: str, params: Any, on_update: Any) -> str:
        effects.append(f"charge {call_id}")
        snapshot(path, crashed)  # what a SIGKILL right now would leave
        return "charged"

    def ensure(call_id: str, params: Any, on_update: Any) -> str:
        effects.append(f"ensure {call_id}")
        return "ensured"

    tools = [
        make_tool("charge", charge, execution_mode="sequential"),
        make_tool("ensure", ensure, replay="safe"),
    ]
    script = [calls("ensure", "charge", "ensure"), faux.assistant_message("ok")]
    scripted = faux.FauxModel(script)
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=_state(scripted, *tools), stream_fn=scripted) as agent,
    ):
        await agent.prompt("go")
    assert effects == ["ensure c0", "charge c1", "ensure c2"]
    # the snapshot's holder (this process) is alive: hand it to a dead one, as after a kill
    db = sqlite3.connect(crashed)
    db.execute("UPDATE pi_trio_sessions SET holder_pid = 999999999")
    db.commit()
    db.close()
    effects.clear()
    resumed = faux.FauxModel([faux.assistant_message("picked up")])
    async with pt.open_session_store(crashed) as store:
        state = pt.AgentState(model=resumed.model, tools=tools)
        async with store.open_agent("s", initial_state=state, stream_fn=resumed) as agent:
            tail = agent.state.messages[-4:]
            await agent.prompt("where were we?")
            assert agent.state.messages[-1].content[0].text == "picked up"  # type: ignore[union-attr]
    assert effects == []  # c2 never started: nothing is re-run, not even a safe tool
    c0, c1, c2, closing = tail
    assert isinstance(c0, pt.ToolResultMessage) and not c0.is_error  # logged result
    assert c0.content == [pt.TextContent("ensured")]
    assert isinstance(c1, pt.ToolResultMessage) and c1.details == {"interrupted": "outcome_unknown"}
    assert isinstance(c2, pt.ToolResultMessage) and c2.details == {"interrupted": "not_started"}
    assert isinstance(closing, pt.AssistantMessage) and closing.stop_reason == "aborted"
    assert pt.repair_transcript(agent.state.messages) == agent.state.messages


class _SafeCall:
    """An ``ensure`` tool (replay="safe") that answers ``answers`` in turn; its first run
    snapshots ``path`` to ``crashed`` while it runs, as a SIGKILL then would leave the file."""

    def __init__(self, tmp_path: Path, answers: list[Any]) -> None:
        self.path, self.crashed = tmp_path / "a.db", tmp_path / "crashed.db"
        self.answers = answers
        self.runs: list[str] = []
        self.tools = [make_tool("ensure", self.ensure, replay="safe")]

    async def ensure(self, call_id: str, params: Any, on_update: Any) -> Any:
        self.runs.append(call_id)
        if len(self.runs) == 1:
            snapshot(self.path, self.crashed)
        return self.answers[len(self.runs) - 1]

    async def resumed(self) -> Any:
        """The call run once, then the snapshot resumed (its holder dead): the call's result
        message as resume repaired it."""
        scripted = faux.FauxModel([calls("ensure"), faux.assistant_message("ok")])
        state = _state(scripted, *self.tools)
        async with (
            pt.open_session_store(self.path) as store,
            store.open_agent("s", initial_state=state, stream_fn=scripted) as a,
        ):
            await a.prompt("go")
        db = sqlite3.connect(self.crashed)
        db.execute("UPDATE pi_trio_sessions SET holder_pid = 999999999")
        db.commit()
        db.close()
        return await self.reopened()

    async def reopened(self) -> Any:
        async with (
            pt.open_session_store(self.crashed) as store,
            store.open_agent("s", initial_state=pt.AgentState(tools=self.tools)) as a,
        ):
            return a.state.messages[-2]


async def test_a_safe_tool_is_re_run_on_resume(tmp_path: Path) -> None:
    call = _SafeCall(tmp_path, ["ensured c0", "ensured c0"])
    result = await call.resumed()
    assert call.runs == ["c0", "c0"]  # re-run on resume
    assert isinstance(result, pt.ToolResultMessage) and not result.is_error
    assert result.content == [pt.TextContent("ensured c0")]
    assert await call.reopened() == result  # repaired once, durably
    assert call.runs == ["c0", "c0"]


async def test_model_headers_are_never_stored(store_url: str) -> None:
    path = store_url
    scripted = faux.FauxModel([faux.assistant_message("hi")])
    secret = attrs.evolve(scripted.model, headers={"Authorization": "Bearer sk-secret"})
    async with pt.open_session_store(path) as store:
        async with store.open_agent(
            "s", initial_state=pt.AgentState(model=secret), stream_fn=scripted
        ) as a:
            await a.prompt("hi")
        async with store.open_agent("s", initial_state=pt.AgentState(model=secret)) as a:
            assert a.state.model is secret  # the caller's object, headers and all
    if "://" not in path:
        assert b"sk-secret" not in Path(path).read_bytes()  # noqa: ASYNC240
    assert all("sk-secret" not in str(data) for _, _, data, _ in rows(path))


def _dead_holder(path: Path) -> None:
    """A snapshot's holder is this (live) process: make it a dead one, as after a SIGKILL."""
    db = sqlite3.connect(path)
    db.execute("UPDATE pi_trio_sessions SET holder_pid = 999999999")
    db.commit()
    db.close()


async def test_a_result_logged_before_the_batch_ended_is_kept(tmp_path: Path) -> None:
    """pi#7053: the fast tool's result survives a crash while the slow one still runs."""
    path, crashed = tmp_path / "a.db", tmp_path / "crashed.db"
    fast_done = trio.Event()

    async def fast(call_id: str, params: Any, on_update: Any) -> str:
        return "fast result"

    async def slow(call_id: str, params: Any, on_update: Any) -> str:
        await fast_done.wait()
        snapshot(path, crashed)  # the fast result is committed, the batch is not over
        return "slow result"

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.ToolExecutionEnd) and event.tool_call_id == "c0":
            fast_done.set()

    tools = [make_tool("fast", fast), make_tool("slow", slow)]
    scripted = faux.FauxModel([calls("fast", "slow"), faux.assistant_message("ok")])
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=_state(scripted, *tools), stream_fn=scripted) as a,
    ):
        a.subscribe(listener)
        await a.prompt("go")
    _dead_holder(crashed)
    async with (
        pt.open_session_store(crashed) as store,
        store.open_agent("s", initial_state=pt.AgentState(tools=tools)) as a,
    ):
        c0, c1, closing = a.state.messages[-3:]
    assert isinstance(c0, pt.ToolResultMessage) and c0.content == [pt.TextContent("fast result")]
    assert not c0.is_error and c0.details is None
    assert isinstance(c1, pt.ToolResultMessage) and c1.details == {"interrupted": "outcome_unknown"}
    assert isinstance(closing, pt.AssistantMessage) and closing.stop_reason == "aborted"


@pytest.mark.parametrize("with_hook", [False, True])
async def test_intents_ride_in_their_message_s_commit_unless_a_hook_runs_first(
    tmp_path: Path, with_hook: bool
) -> None:
    path = tmp_path / "a.db"
    at_message_end: list[set[str]] = []
    hooked: list[str] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.AssistantMessage):
            at_message_end.append(
                {d["toolCallId"] for _, k, d, _ in rows(path) if k == "tool_intent"}
            )

    def before(context: pt.BeforeToolCallContext) -> None:
        hooked.append(context.tool_call.id)

    scripted = faux.FauxModel([calls("anoop", "anoop"), faux.assistant_message("done")])
    options: dict[str, Any] = {"before_tool_call": before} if with_hook else {}
    state = _state(scripted, make_tool("anoop", _anoop))
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=state, stream_fn=scripted, **options) as agent,
    ):
        agent.subscribe(listener)
        await agent.prompt("go")
    assert at_message_end[0] == (set() if with_hook else {"c0", "c1"})
    assert hooked == (["c0", "c1"] if with_hook else [])
    assert kinds(path).count("tool_intent") == 2  # logged once either way


async def test_a_new_session_keeps_the_history_it_was_given(tmp_path: Path) -> None:
    history: list[pt.AgentMessage] = [
        pt.UserMessage("earlier question", timestamp=1),
        faux.assistant_message("earlier answer"),
    ]
    async with pt.open_session_store(tmp_path / "a.db") as store:
        async with store.open_agent("s", initial_state=pt.AgentState(messages=history)):
            pass
        async with store.open_agent("s") as agent:
            assert agent.state.messages == history


async def test_only_calls_that_start_at_once_get_their_intent_early(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    at_message_end: list[set[str]] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd) and isinstance(event.message, pt.AssistantMessage):
            at_message_end.append(
                {d["toolCallId"] for _, k, d, _ in rows(path) if k == "tool_intent"}
            )

    scripted = faux.FauxModel([calls("anoop", "anoop", "anoop"), faux.assistant_message("done")])
    state = _state(scripted, make_tool("anoop", _anoop))
    async with (
        pt.open_session_store(path) as store,
        store.open_agent(
            "s", initial_state=state, stream_fn=scripted, max_parallel_tools=2
        ) as agent,
    ):
        agent.subscribe(listener)
        await agent.prompt("go")
    assert at_message_end[0] == {"c0", "c1"}  # c2 waits for a free slot: its intent comes later
    assert kinds(path).count("tool_intent") == 3


async def test_removed_and_replaced_queue_items_come_back_as_edited(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:
        async with store.open_agent("s") as agent:
            agent.follow_up("first")
            second = agent.follow_up("second")
            third = agent.steer("third")
            agent.replace_queued(second.id, "second, edited")
            agent.remove_queued(third.id)
        async with store.open_agent("s") as agent:
            texts = [item.message.content[0].text for item in agent.queued()]  # type: ignore[union-attr]
    assert texts == ["first", "second, edited"]


@pytest.mark.parametrize(
    ("second", "expected", "is_error"),
    [
        (pt.ToolResult("one text"), [pt.TextContent("one text")], False),  # before: 8 blocks
        (7, [pt.TextContent("TypeError: tool returned int, expected pt.ToolResult or str")], True),
    ],
)
async def test_a_safe_tool_re_run_on_resume_has_its_result_checked_as_in_a_run(
    tmp_path: Path, second: Any, expected: list[pt.TextContent], is_error: bool
) -> None:
    call = _SafeCall(tmp_path, ["ensured", second])
    result = await call.resumed()
    assert call.runs == ["c0", "c0"]
    assert isinstance(result, pt.ToolResultMessage)
    assert (result.content, result.is_error) == (expected, is_error)


async def test_a_durable_agent_checks_what_before_tool_call_answers_as_a_plain_one_does(
    tmp_path: Path,
) -> None:
    def hook(context: pt.BeforeToolCallContext) -> Any:
        return {"block": True}  # a dict, not a pt.BeforeToolCallResult

    tools = [make_tool("ensure", lambda call_id, params, on_update: "ensured")]
    transcripts = []
    for durable in (False, True):
        scripted = faux.FauxModel([calls("ensure"), faux.assistant_message("ok")])
        options: dict[str, Any] = {"stream_fn": scripted, "before_tool_call": hook}
        state = _state(scripted, *tools)
        async with contextlib.AsyncExitStack() as stack:
            if durable:
                store = await stack.enter_async_context(pt.open_session_store(tmp_path / "a.db"))
                agent = await stack.enter_async_context(
                    store.open_agent("s", initial_state=state, **options)
                )
            else:
                agent = pt.Agent(initial_state=state, **options)
            await agent.prompt("go")
        transcripts.append([m for m in agent.state.messages if m.role == "toolResult"])
    plain, durable_ = transcripts
    assert plain[0].content[0].text.startswith("TypeError: before_tool_call returned dict")  # type: ignore[union-attr]
    assert [(m.content, m.is_error) for m in durable_] == [(m.content, m.is_error) for m in plain]  # type: ignore[union-attr]
