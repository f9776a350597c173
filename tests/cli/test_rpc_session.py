"""The rpc protocol in-process over an in-memory stream, on the canned scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.cli._agents import agent_factory
from pi_trio.cli._lines import StreamLines
from pi_trio.cli._rpc import RpcSession

from ..transcript import assert_transcript_valid
from ._helpers import JsonLinesClient, is_text_delta, is_type


class Harness:
    def __init__(self, client: JsonLinesClient, session: RpcSession) -> None:
        self.client = client
        self.session = session
        self.agent = session.agent


@pytest.fixture
async def rpc(nursery: trio.Nursery) -> AsyncIterator[Harness]:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    agent = agent_factory("faux", token_delay=0.01)()
    session = RpcSession(agent, StreamLines(server_stream))
    nursery.start_soon(session.run)
    yield Harness(JsonLinesClient(client_stream), session)


def _user_texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for message in messages:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


async def test_prompt_streams_events_until_agent_end(rpc: Harness, autojump_clock: Any) -> None:
    reply = await rpc.client.command({"type": "prompt", "message": "what is 2 + 3 * 4?", "id": 7})
    assert reply == {"type": "response", "command": "prompt", "id": 7, "success": True}
    events = await rpc.client.until(is_type("agent_end"))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start"
    assert "message_update" in kinds and "tool_execution_end" in kinds
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["toolName"] == "calculate" and end["result"]["content"][0]["text"] == "14"
    final = events[-1]["messages"][-1]
    assert final["role"] == "assistant" and "14" in final["content"][0]["text"]
    state = await rpc.client.command({"type": "get_state", "id": "s"})
    assert state["data"]["isStreaming"] is False
    assert len(state["data"]["messages"]) == 4
    assert state["data"]["tools"] == ["clock", "calculate", "read_file"]


async def test_steer_and_follow_up_while_a_prompt_runs(rpc: Harness, autojump_clock: Any) -> None:
    await rpc.client.command({"type": "prompt", "message": "what time is it?", "id": 1})
    await rpc.client.until(is_type("tool_execution_start"))
    assert (await rpc.client.command({"type": "steer", "message": "steered", "id": 2}))["success"]
    follow = {"role": "user", "content": "followed", "timestamp": 1}
    assert (await rpc.client.command({"type": "follow_up", "message": follow, "id": 3}))["success"]
    events = await rpc.client.until(is_type("agent_end"))
    texts = _user_texts(events[-1]["messages"])
    # steering goes in after the tool turn, the follow-up only once the agent would stop
    assert texts == ["what time is it?", "steered", "followed"]
    assert_transcript_valid(rpc.agent.state.messages)


async def test_abort_mid_stream_then_the_session_goes_on(rpc: Harness, autojump_clock: Any) -> None:
    await rpc.client.command({"type": "prompt", "message": "tell me a long story", "id": 1})
    await rpc.client.until(is_text_delta)
    await rpc.client.until(is_text_delta)
    await rpc.client.send({"type": "abort", "id": "a"})
    items = await rpc.client.until(lambda i: i["type"] == "response" and i.get("id") == "a")
    kinds = [i["type"] for i in items]
    assert kinds.index("agent_end") < kinds.index("response")  # the run is over when abort replies
    ended = [i for i in items if i["type"] == "message_end"][-1]["message"]
    assert ended["stopReason"] == "aborted"
    assert 0 < len(ended["content"][0]["text"]) < 200
    assert_transcript_valid(rpc.agent.state.messages, aborted=True)
    reply = await rpc.client.command({"type": "prompt", "message": "hello again", "id": 2})
    assert reply["success"]
    events = await rpc.client.until(is_type("agent_end"))
    assert "hello again" in events[-1]["messages"][-1]["content"][0]["text"]
    assert len(rpc.agent.state.messages) == 4


async def test_abort_while_idle_and_reset(rpc: Harness, autojump_clock: Any) -> None:
    assert (await rpc.client.command({"type": "abort", "id": 1}))["success"]
    await rpc.client.command({"type": "prompt", "message": "tell me a long story", "id": 2})
    await rpc.client.until(is_type("message_update"))
    assert (await rpc.client.command({"type": "reset", "id": 3}))["success"]
    state = await rpc.client.command({"type": "get_state", "id": 4})
    assert state["data"]["messages"] == [] and state["data"]["isStreaming"] is False


async def test_a_second_prompt_while_busy_is_refused_and_the_run_goes_on(
    rpc: Harness, autojump_clock: Any
) -> None:
    await rpc.client.command({"type": "prompt", "message": "what time is it?", "id": 1})
    reply = await rpc.client.command({"type": "prompt", "message": "again", "id": 2})
    assert reply["success"] is False and "busy" in reply["error"]
    events = await rpc.client.until(is_type("agent_end"))
    assert _user_texts(events[-1]["messages"]) == ["what time is it?"]


@pytest.mark.parametrize(
    ("line", "reply_id", "command", "error"),
    [
        (b"not json", None, None, "invalid JSON"),
        (b"\xff\xfe", None, None, "invalid JSON"),
        (b"[1, 2]", None, None, "a command must be a JSON object"),
        (b'{"id": 1}', 1, None, "unknown command type None"),
        (b'{"type": "dance", "id": "x"}', "x", "dance", "unknown command type 'dance'"),
        (b'{"type": 3, "id": 2}', 2, None, "unknown command type 3"),
        (b'{"type": "prompt", "id": 3}', 3, "prompt", "message: required"),
        (b'{"type": "prompt", "message": 5, "id": 4}', 4, "prompt", "message: expected"),
        (
            b'{"type": "prompt", "message": {"role": "user", "content": [{"type": "img"}]}}',
            None,
            "prompt",
            "message: content[0].type: unknown type 'img'",
        ),
        (b'{"type": "prompt", "message": [1], "id": 5}', 5, "prompt", "message[0]"),
        (
            b'{"type": "prompt", "message": "hi", "images": [{"type": "image"}], "id": 6}',
            6,
            "prompt",
            "images[0]",
        ),
        (b'{"type": "steer", "id": 8}', 8, "steer", "message: expected"),
        (b'{"type": "follow_up", "message": {"role": "robot"}}', None, "follow_up", "message:"),
        (b'{"type": "get_state", "id": NaN}', None, None, "invalid JSON"),
        (b'{"type": "prompt", "message": "", "id": 9}', 9, "prompt", "message: empty; send some"),
        (b'{"type": "prompt", "message": "  ", "id": 10}', 10, "prompt", "message: empty"),
        (b'{"type": "prompt", "message": [], "id": 11}', 11, "prompt", "message: an empty list"),
        (b'{"type": "steer", "message": "", "id": 12}', 12, "steer", "message: empty"),
        (
            b'{"type": "prompt", "message": "look", "id": 13, "images": '
            b'[{"type": "image", "data": "not base64!", "mimeType": "image/png"}]}',
            13,
            "prompt",
            "images[0].data: not valid base64",
        ),
        (
            b'{"type": "configure", "messageUpdates": "tiny", "id": 14}',
            14,
            "configure",
            "messageUpdates: expected one of full, compact",
        ),
    ],
)
async def test_malformed_lines_get_an_error_reply_and_lose_nothing(
    rpc: Harness, autojump_clock: Any, line: bytes, reply_id: Any, command: str | None, error: str
) -> None:
    await rpc.client.command({"type": "prompt", "message": "hi", "id": "first"})
    await rpc.client.until(is_type("agent_end"))
    before = pt.to_json(rpc.agent.state.messages[-1])
    await rpc.client.send(line)
    reply = await rpc.client.receive()
    assert reply["type"] == "response" and reply["success"] is False
    assert reply.get("id") == reply_id and reply["command"] == command
    assert error in reply["error"], reply["error"]
    state = await rpc.client.command({"type": "get_state", "id": "after"})
    assert len(state["data"]["messages"]) == 2
    assert state["data"]["messages"][-1] == before


async def test_end_of_input_lets_the_running_prompt_finish(autojump_clock: Any) -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    agent = agent_factory("faux", token_delay=0.01)()
    client = JsonLinesClient(client_stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(RpcSession(agent, StreamLines(server_stream)).run)
        await client.command({"type": "prompt", "message": "what time is it?", "id": 1})
        await client_stream.send_stream.aclose()
        events = await client.until(is_type("agent_end"))
    assert events[-1]["messages"][-1]["stopReason"] == "stop"
    assert not agent.state.is_streaming


async def test_compact_message_updates_carry_only_the_delta(
    rpc: Harness, autojump_clock: Any
) -> None:
    reply = await rpc.client.command({"type": "configure", "messageUpdates": "compact", "id": 1})
    assert reply["success"] and reply["data"] == {"messageUpdates": "compact"}
    await rpc.client.command({"type": "prompt", "message": "hi", "id": 2})
    events = await rpc.client.until(is_type("agent_end"))
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all(set(u) == {"type", "assistantMessageEvent"} for u in updates)
    assert all("partial" not in u["assistantMessageEvent"] for u in updates)
    deltas = "".join(
        u["assistantMessageEvent"]["delta"]
        for u in updates
        if u["assistantMessageEvent"]["type"] == "text_delta"
    )
    end = next(
        e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    )
    assert deltas == end["message"]["content"][0]["text"]  # the deltas rebuild the message
    await rpc.client.command({"type": "configure", "messageUpdates": "full", "id": 3})
    await rpc.client.command({"type": "prompt", "message": "again", "id": 4})
    events = await rpc.client.until(is_type("agent_end"))
    full = next(e for e in events if e["type"] == "message_update")
    assert "message" in full and "partial" in full["assistantMessageEvent"]  # pi's shape


async def test_valid_base64_images_are_accepted(rpc: Harness, autojump_clock: Any) -> None:
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    reply = await rpc.client.command(
        {"type": "prompt", "message": "look", "images": [image], "id": 1}
    )
    assert reply["success"], reply
    await rpc.client.until(is_type("agent_end"))
