"""Each of pi's RPC commands answers in pi's response shape: models and thinking levels, queue
modes and queues, sessions (in memory and durable), entries and stats, and pi's error shape
for bad fields and for the coding agent's commands pi-trio does not carry out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.cli._agents import agent_factory
from pi_trio.cli._approvals import with_approvals
from pi_trio.cli._lines import StreamLines
from pi_trio.cli._rpc import COMMANDS, RpcSession
from pi_trio.cli._rpc_commands import UNSUPPORTED
from pi_trio.cli._rpc_sessions import MemorySessions, SessionHost, open_durable_sessions

from ._helpers import JsonLinesClient, is_type


async def _serve(nursery: trio.Nursery, host: SessionHost) -> JsonLinesClient:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    nursery.start_soon(RpcSession(host, StreamLines(server_stream)).run)
    return JsonLinesClient(client_stream)


@pytest.fixture
async def client(nursery: trio.Nursery) -> AsyncIterator[JsonLinesClient]:
    yield await _serve(nursery, MemorySessions(agent_factory("faux", token_delay=0.01)))


async def _ok(client: JsonLinesClient, command: dict[str, Any]) -> Any:
    reply = await client.command({**command, "id": "c"})
    assert reply["success"] is True, reply.get("error")
    assert list(reply)[:4] == ["id", "type", "command", "success"]
    assert reply["command"] == command["type"]
    return reply.get("data")


async def _error(client: JsonLinesClient, command: dict[str, Any]) -> str:
    reply = await client.command({**command, "id": "e"})
    assert reply == {
        "id": "e",
        "type": "response",
        "command": command["type"],
        "success": False,
        "error": reply["error"],
    }
    return reply["error"]  # type: ignore[no-any-return]


async def _run(client: JsonLinesClient, text: str) -> list[dict[str, Any]]:
    await _ok(client, {"type": "prompt", "message": text})
    return await client.until(is_type("agent_settled"))


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED))
async def test_the_coding_agent_s_commands_are_refused_saying_why(
    client: JsonLinesClient, kind: str
) -> None:
    error = await _error(client, {"type": kind})
    assert error == f"{kind} is not supported by pi-trio: {UNSUPPORTED[kind]}"


def test_every_command_of_pi_1_6_is_known() -> None:
    pi_commands = {
        "prompt",
        "steer",
        "follow_up",
        "abort",
        "clear_queue",
        "new_session",
        "get_state",
        "set_model",
        "cycle_model",
        "get_available_models",
        "set_thinking_level",
        "cycle_thinking_level",
        "get_available_thinking_levels",
        "set_steering_mode",
        "set_follow_up_mode",
        "compact",
        "set_auto_compaction",
        "set_auto_retry",
        "abort_retry",
        "bash",
        "abort_bash",
        "get_session_stats",
        "export_html",
        "switch_session",
        "fork",
        "clone",
        "get_fork_messages",
        "get_entries",
        "get_tree",
        "get_last_assistant_text",
        "set_session_name",
        "get_messages",
        "get_commands",
    }  # fmt: skip  (rpc-types.d.ts's RpcCommand)
    pi_trio_commands = {"approve", "deny"}  # decisions about tool calls that wait
    assert set(COMMANDS) == pi_commands | pi_trio_commands


async def test_an_extension_ui_response_gets_no_reply(client: JsonLinesClient) -> None:
    await client.send({"type": "extension_ui_response", "id": "x", "cancelled": True})
    await _ok(client, {"type": "get_state"})
    assert [item["id"] for item in client.seen] == ["c"]


async def test_state_and_modes(client: JsonLinesClient) -> None:
    state = await _ok(client, {"type": "get_state"})
    assert state["steeringMode"] == state["followUpMode"] == "one-at-a-time"
    assert state["isCompacting"] is False and state["autoCompactionEnabled"] is False
    assert await _ok(client, {"type": "set_steering_mode", "mode": "all"}) is None
    assert await _ok(client, {"type": "set_follow_up_mode", "mode": "all"}) is None
    state = await _ok(client, {"type": "get_state"})
    assert state["steeringMode"] == state["followUpMode"] == "all"
    error = await _error(client, {"type": "set_steering_mode", "mode": "some"})
    assert error == "mode: expected one of all, one-at-a-time, got 'some'"


async def test_models_of_the_registry_with_their_keys(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = MemorySessions(agent_factory("faux", token_delay=0.01))
    client = await _serve(nursery, host)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GROQ_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    models = (await _ok(client, {"type": "get_available_models"}))["models"]
    providers = {m["provider"] for m in models}
    assert providers <= {"faux", "anthropic", "ollama"} and "faux" in providers
    assert "anthropic" in providers
    reasoning = next(m for m in models if m["provider"] == "anthropic" and m["reasoning"])
    chosen = await _ok(
        client, {"type": "set_model", "provider": "anthropic", "modelId": reasoning["id"]}
    )
    assert chosen == reasoning
    assert host.agent.stream_fn is None  # a real provider's model runs on pt.stream_simple
    levels = (await _ok(client, {"type": "get_available_thinking_levels"}))["levels"]
    assert levels == ["off", "minimal", "low", "medium", "high"]
    assert await _ok(client, {"type": "set_thinking_level", "level": "xhigh"}) is None
    assert client.seen[-2] == {"type": "thinking_level_changed", "level": "high"}
    assert (await _ok(client, {"type": "get_state"}))["thinkingLevel"] == "high"  # clamped
    assert await _ok(client, {"type": "cycle_thinking_level"}) == {"level": "off"}
    error = await _error(client, {"type": "set_model", "provider": "openai", "modelId": "gpt-4o"})
    assert error.startswith("Model not found: openai/gpt-4o")
    error = await _error(client, {"type": "set_thinking_level", "level": "huge"})
    assert error.startswith("level: expected one of off, minimal")
    seen = []  # cycle_model goes through every available model, then starts again
    for _ in models:
        cycled = await _ok(client, {"type": "cycle_model"})
        assert cycled["isScoped"] is False
        seen.append(cycled["model"])
    assert sorted(m["id"] for m in seen) == sorted(m["id"] for m in models)
    assert seen[-1] == reasoning
    assert await _ok(client, {"type": "set_thinking_level", "level": "high"}) is None
    back = await _ok(client, {"type": "set_model", "provider": "faux", "modelId": "faux-1"})
    assert back["id"] == "faux-1" and host.agent.stream_fn is host.scripted_stream
    assert client.seen[-2] == {"type": "thinking_level_changed", "level": "off"}  # as pi 1.6
    assert (await _ok(client, {"type": "get_state"}))["thinkingLevel"] == "off"
    events = await _run(client, "what is 2 + 2?")  # the scripted model answers again
    assert "4" in events[-2]["messages"][-1]["content"][0]["text"]


async def test_a_model_without_reasoning_has_only_off(client: JsonLinesClient) -> None:
    assert await _ok(client, {"type": "get_available_thinking_levels"}) == {"levels": ["off"]}
    reply = await client.command({"type": "cycle_thinking_level", "id": "c"})
    assert reply["success"] and "data" in reply and reply["data"] is None, reply  # as pi
    assert await _ok(client, {"type": "set_thinking_level", "level": "high"}) is None
    assert (await _ok(client, {"type": "get_state"}))["thinkingLevel"] == "off"
    assert not any(item["type"] == "thinking_level_changed" for item in client.seen)


async def test_clear_queue_returns_the_texts(client: JsonLinesClient) -> None:
    await _ok(client, {"type": "steer", "message": "one"})
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    await _ok(client, {"type": "follow_up", "message": "two", "images": [image]})
    state = await _ok(client, {"type": "get_state"})
    assert state["pendingMessageCount"] == 2
    cleared = await _ok(client, {"type": "clear_queue"})
    assert cleared == {"steering": ["one"], "followUp": ["two"]}
    updates = [i for i in client.seen if i["type"] == "queue_update"]
    assert updates[-1] == {"type": "queue_update", "steering": [], "followUp": []}
    assert (await _ok(client, {"type": "get_state"}))["pendingMessageCount"] == 0


async def test_entries_stats_and_last_text(client: JsonLinesClient, autojump_clock: Any) -> None:
    assert await _ok(client, {"type": "get_entries"}) == {"entries": [], "leafId": None}
    assert await _ok(client, {"type": "get_last_assistant_text"}) == {"text": None}
    await _run(client, "what is 6 * 7?")
    entries = await _ok(client, {"type": "get_entries"})
    assert [e["id"] for e in entries["entries"]] == ["00000000", "00000001", "00000002", "00000003"]
    assert entries["leafId"] == "00000003"
    first = entries["entries"][0]
    assert set(first) == {"type", "id", "parentId", "timestamp", "message"}
    assert first["type"] == "message" and first["timestamp"].endswith("Z")
    since = await _ok(client, {"type": "get_entries", "since": "00000001"})
    assert since["entries"] == entries["entries"][2:]
    error = await _error(client, {"type": "get_entries", "since": "nope"})
    assert error == "Entry not found: nope"
    stats = await _ok(client, {"type": "get_session_stats"})
    assert stats["totalMessages"] == 4 and stats["toolCalls"] == 1 and stats["toolResults"] == 1
    assert set(stats["tokens"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}
    text = await _ok(client, {"type": "get_last_assistant_text"})
    assert text == {"text": "The calculate tool says: 42"}


async def test_sessions_in_memory(client: JsonLinesClient, autojump_clock: Any) -> None:
    first = await _ok(client, {"type": "get_state"})
    await _run(client, "hello")
    assert await _ok(client, {"type": "new_session"}) == {"cancelled": False}
    second = await _ok(client, {"type": "get_state"})
    assert second["sessionId"] != first["sessionId"] and second["messageCount"] == 0
    error = await _error(client, {"type": "switch_session", "sessionPath": "elsewhere"})
    assert error.startswith("no session 'elsewhere' in this process")
    error = await _error(client, {"type": "switch_session"})
    assert error.startswith("sessionPath: required")
    assert (await _ok(client, {"type": "get_state"}))["sessionId"] == second["sessionId"]
    assert await _ok(client, {"type": "switch_session", "sessionPath": first["sessionId"]}) == {
        "cancelled": False
    }
    assert (await _ok(client, {"type": "get_state"}))["messageCount"] == 2


async def test_new_session_aborts_the_running_prompt(
    client: JsonLinesClient, autojump_clock: Any
) -> None:
    await _ok(client, {"type": "prompt", "message": "tell me a long story"})
    await client.until(is_type("message_update"))
    await _ok(client, {"type": "new_session"})
    settled = [i for i in client.seen if i["type"] == "agent_settled"]
    assert settled == [{"type": "agent_settled", "aborted": True}]
    await _run(client, "what is 1 + 1?")  # the new session runs
    assert (await _ok(client, {"type": "get_state"}))["messageCount"] == 4


async def test_a_refused_switch_leaves_the_running_prompt_alone(
    client: JsonLinesClient, autojump_clock: Any
) -> None:
    await _ok(client, {"type": "prompt", "message": "tell me a long story"})
    await client.until(is_type("message_update"))
    with trio.fail_after(60):  # virtual: the story streams on after the refusal
        error = await _error(client, {"type": "switch_session", "sessionPath": "no-such-session"})
        assert error.startswith("no session 'no-such-session' in this process")
        settled = await client.until(is_type("agent_settled"))
    assert settled[-1] == {"type": "agent_settled", "aborted": False}
    assert (await _ok(client, {"type": "get_state"}))["messageCount"] == 2


class _Lines:
    """Lines read as fast as Python allows (no checkpoint between them, as when a client's
    lines arrive together), answers kept; end of input after the last."""

    def __init__(self, *lines: dict[str, Any]) -> None:
        self.lines = [json.dumps(line).encode() for line in lines]
        self.sent: list[dict[str, Any]] = []

    async def receive_line(self) -> bytes | None:
        return self.lines.pop(0) if self.lines else None

    async def send_line(self, data: bytes) -> None:
        self.sent.append(json.loads(data))


async def test_compact_right_after_a_prompt_is_refused_and_the_prompt_runs(
    autojump_clock: Any,
) -> None:
    prompt = {"type": "prompt", "message": "what is 6 * 7?", "id": "p"}
    lines = _Lines(prompt, {"type": "compact", "id": "c"})  # before the prompt's task starts
    host = MemorySessions(agent_factory("faux", token_delay=0.01))
    await RpcSession(host, lines).run()  # to the end of input, and the prompt's end
    replies = {line["id"]: line for line in lines.sent if line["type"] == "response"}
    assert replies["p"]["success"]
    assert replies["c"]["error"] == "Cannot compact while the agent is running; abort it first"
    ran = [line["type"] for line in lines.sent if line["type"].startswith("agent_")]
    assert ran == ["agent_start", "agent_end", "agent_settled"]


async def test_durable_sessions_switch_by_id_and_survive(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions.db")
    make_agent = agent_factory("faux", token_delay=0)
    async with (
        open_durable_sessions(store, "first", make_agent) as sessions,
        trio.open_nursery() as nursery,
    ):
        client = await _serve(nursery, sessions)
        await _run(client, "what is 1 + 1?")
        await _ok(client, {"type": "set_follow_up_mode", "mode": "all"})
        await _ok(client, {"type": "new_session"})
        state = await _ok(client, {"type": "get_state"})
        second = state["sessionId"]
        assert state["followUpMode"] == "all" and state["messageCount"] == 0  # carried over
        await _run(client, "hello")
        error = await _error(client, {"type": "switch_session", "sessionPath": "nope"})
        assert "nope" in error
        await _ok(client, {"type": "switch_session", "sessionPath": "first"})
        messages = (await _ok(client, {"type": "get_messages"}))["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
        await client.lines._stream.aclose()
    async with pt.open_session_store(store) as opened:
        ids = {info.session_id for info in await opened.list_sessions()}
        assert ids == {"first", second}
        assert len(await opened.load(second)) > 0


async def test_compact_summarises_the_older_messages_as_pi_answers_it(
    nursery: trio.Nursery,
) -> None:
    host = MemorySessions(agent_factory("faux", token_delay=0.01))
    client = await _serve(nursery, host)
    assert "Nothing to compact" in await _error(client, {"type": "compact"})
    for text in ("what time is it", "what is 2 + 3", "what is 4 * 5"):
        await _run(client, text)
    host.agent.compaction = pt.Compaction(reserve_tokens=1_000, keep_recent_tokens=20)
    before = await _ok(client, {"type": "get_messages"})
    await client.send({"type": "compact", "customInstructions": "keep the sums", "id": "k"})
    lines = await client.until(lambda item: item.get("id") == "k")
    reply, events = lines[-1], lines[:-1]
    assert reply["success"] is True, reply
    data = reply["data"]
    assert set(data) == {"summary", "firstKeptEntryId", "tokensBefore"}
    assert data["summary"] and data["tokensBefore"] > 0
    assert [e["type"] for e in events] == ["compaction_start", "compaction_end"]
    assert events[1]["result"] == {"summary": data["summary"], "tokensBefore": data["tokensBefore"]}
    after = (await _ok(client, {"type": "get_messages"}))["messages"]
    assert after[0]["role"] == "compactionSummary" and after[0]["summary"] == data["summary"]
    assert len(after) < len(before["messages"])
    entries = (await _ok(client, {"type": "get_entries"}))["entries"]
    assert entries[1]["id"] == data["firstKeptEntryId"]
    assert entries[1]["message"] == after[1]


async def test_set_auto_compaction_turns_the_agent_s_compaction_on_and_off(
    client: JsonLinesClient,
) -> None:
    assert (await _ok(client, {"type": "get_state"}))["autoCompactionEnabled"] is False
    await _ok(client, {"type": "set_auto_compaction", "enabled": True})
    assert (await _ok(client, {"type": "get_state"}))["autoCompactionEnabled"] is True
    await _ok(client, {"type": "set_auto_compaction", "enabled": False})
    assert (await _ok(client, {"type": "get_state"}))["autoCompactionEnabled"] is False
    assert "enabled: expected true or false" in await _error(
        client, {"type": "set_auto_compaction", "enabled": "yes"}
    )


async def test_switching_to_the_session_already_open_changes_nothing(tmp_path: Path) -> None:
    make_agent = agent_factory("faux", token_delay=0.01)
    async with (
        open_durable_sessions(str(tmp_path / "sessions.db"), "s1", make_agent) as sessions,
        trio.open_nursery() as nursery,
    ):
        client = await _serve(nursery, sessions)
        await _ok(client, {"type": "prompt", "message": "wait 0.5"})
        assert await _ok(client, {"type": "switch_session", "sessionPath": "s1"}) == {
            "cancelled": False
        }
        settled = await client.until(is_type("agent_settled"))
        assert settled[-1] == {"type": "agent_settled", "aborted": False}  # the run went on
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("model_given", [False, True])
async def test_a_resumed_session_runs_the_model_it_is_labelled_with(
    tmp_path: Path, model_given: bool
) -> None:
    store = str(tmp_path / "sessions.db")
    real = agent_factory("ollama/llama3.1", token_delay=0)
    async with open_durable_sessions(store, "s", real):
        pass  # the session's log names ollama/llama3.1
    scripted = agent_factory("faux", token_delay=0)
    async with open_durable_sessions(store, "s", scripted, model_given=model_given) as sessions:
        agent = sessions.agent
        if model_given:  # --model faux: the scripted model, labelled as such
            assert agent.state.model.provider == "faux" and agent.stream_fn is not None
        else:  # no --model: the session's own model, run by its provider
            assert (agent.state.model.provider, agent.state.model.id) == ("ollama", "llama3.1")
            assert agent.stream_fn is None


async def test_a_steered_message_of_any_role_leaves_the_queue_display(
    client: JsonLinesClient, autojump_clock: Any
) -> None:
    await _ok(client, {"type": "prompt", "message": "tell me a long story"})
    await client.until(is_type("message_update"))
    note = {"role": "custom", "customType": "note", "content": "remember X", "display": True}
    await _ok(client, {"type": "steer", "message": {**note, "timestamp": 1}})
    await client.until(is_type("agent_settled"))
    updates = [item for item in client.seen if item["type"] == "queue_update"]
    assert [len(update["steering"]) for update in updates] == [1, 0]


async def test_a_durable_switch_mid_run_aborts_it_and_leaves_the_other_session_alone(
    tmp_path: Path,
) -> None:  # real time: the store's thread would let a mock clock finish the run first
    store = str(tmp_path / "sessions.db")
    make = with_approvals(agent_factory("faux", token_delay=0.01), frozenset({"calculate"}))
    template = make()
    async with (
        pt.open_session_store(store) as opened,
        opened.open_agent("B", initial_state=template.state, stream_fn=template.stream_fn) as b,
    ):
        await b.prompt("what is 2 + 3")  # its call waits; approved, not continued
        [waiting] = b.state.pending_approvals
        b.approve(waiting.id)
    async with (
        trio.open_nursery() as nursery,
        open_durable_sessions(store, "A", make) as sessions,
    ):
        client = await _serve(nursery, sessions)
        await _ok(client, {"type": "prompt", "message": "wait 60"})
        await client.until(is_type("tool_execution_start"))
        with trio.fail_after(30):
            await _ok(client, {"type": "switch_session", "sessionPath": "B"})
        settled = [item for item in client.seen if item["type"] == "agent_settled"]
        assert settled == [{"type": "agent_settled", "aborted": True}]
        messages = (await _ok(client, {"type": "get_messages"}))["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]  # B as it was
        nursery.cancel_scope.cancel()
