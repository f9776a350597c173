"""pi's RPC protocol in-process over an in-memory stream, on the canned scripted model: the
run's events, queues, abort and malformed input."""

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
from ._helpers import JsonLinesClient, is_text_delta, is_type, rpc_session


class Harness:
    def __init__(self, client: JsonLinesClient, session: RpcSession) -> None:
        self.client = client
        self.session = session
        self.agent = session.agent


@pytest.fixture
async def rpc(nursery: trio.Nursery) -> AsyncIterator[Harness]:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    agent = agent_factory("faux", token_delay=0.01)()
    session = rpc_session(agent, StreamLines(server_stream))
    nursery.start_soon(session.run)
    yield Harness(JsonLinesClient(client_stream), session)


def _user_texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for message in messages:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


async def test_prompt_streams_events_until_agent_settled(rpc: Harness, autojump_clock: Any) -> None:
    reply = await rpc.client.command({"type": "prompt", "message": "what is 2 + 3 * 4?", "id": 7})
    assert reply == {
        "id": 7,
        "type": "response",
        "command": "prompt",
        "success": True,
        "data": {"disposition": "started"},
    }
    assert list(reply) == ["id", "type", "command", "success", "data"]  # pi's order
    events = await rpc.client.until(is_type("agent_settled"))
    kinds = [e["type"] for e in events if e["type"] != "message_update"]
    assert kinds == [
        "agent_start", "turn_start", "message_start", "message_end",  # the prompt
        "message_start", "message_end", "tool_execution_start", "tool_execution_end",
        "message_start", "message_end", "turn_end",  # the tool result
        "turn_start", "message_start", "message_end", "turn_end", "agent_end", "agent_settled",
    ]  # fmt: skip
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["toolName"] == "calculate" and end["result"]["content"][0]["text"] == "14"
    assert events[-2]["willRetry"] is False and events[-1] == {
        "type": "agent_settled",
        "aborted": False,
    }
    final = events[-2]["messages"][-1]
    assert final["role"] == "assistant" and "14" in final["content"][0]["text"]
    messages = await rpc.client.command({"type": "get_messages", "id": "m"})
    assert messages["data"]["messages"] == [pt.to_json(m) for m in rpc.agent.state.messages]
    assert len(messages["data"]["messages"]) == 4


async def test_steer_and_follow_up_while_a_prompt_runs(rpc: Harness, autojump_clock: Any) -> None:
    await rpc.client.command({"type": "prompt", "message": "wait 1", "id": 1})
    await rpc.client.until(is_type("tool_execution_start"))
    await rpc.client.send({"type": "steer", "message": "steered", "id": 2})
    items = await rpc.client.until(lambda i: i["type"] == "response")
    update = next(i for i in items if i["type"] == "queue_update")  # pi: before the response
    assert update == {"type": "queue_update", "steering": ["steered"], "followUp": []}
    assert items[-1]["data"] == {"disposition": "queued"}
    follow = {"role": "user", "content": "followed", "timestamp": 1}
    reply = await rpc.client.command({"type": "follow_up", "message": follow, "id": 3})
    assert reply["data"] == {"disposition": "queued"}
    events = await rpc.client.until(is_type("agent_settled"))
    texts = _user_texts(events[-2]["messages"])
    # steering goes in after the tool turn, the follow-up only once the agent would stop
    assert texts == ["wait 1", "steered", "followed"]
    updates = [e for e in rpc.client.seen if e["type"] == "queue_update"]
    assert [(u["steering"], u["followUp"]) for u in updates] == [
        (["steered"], []),
        (["steered"], ["followed"]),
        ([], ["followed"]),  # each taken by the run, just before its message_start
        ([], []),
    ]
    delivered = rpc.client.seen.index(updates[2])
    assert rpc.client.seen[delivered + 1]["type"] == "message_start"
    assert_transcript_valid(rpc.agent.state.messages)


async def test_abort_mid_stream_then_the_session_goes_on(rpc: Harness, autojump_clock: Any) -> None:
    await rpc.client.command({"type": "prompt", "message": "tell me a long story", "id": 1})
    await rpc.client.until(is_text_delta)
    await rpc.client.until(is_text_delta)
    await rpc.client.send({"type": "abort", "id": "a"})
    items = await rpc.client.until(lambda i: i["type"] == "response" and i.get("id") == "a")
    kinds = [i["type"] for i in items]
    # the run has settled when abort replies
    assert kinds.index("agent_end") < kinds.index("agent_settled") < kinds.index("response")
    assert items[kinds.index("agent_settled")]["aborted"] is True
    assert items[-1] == {"id": "a", "type": "response", "command": "abort", "success": True}
    ended = [i for i in items if i["type"] == "message_end"][-1]["message"]
    assert ended["stopReason"] == "aborted"
    assert 0 < len(ended["content"][0]["text"]) < 200
    assert_transcript_valid(rpc.agent.state.messages, aborted=True)
    reply = await rpc.client.command({"type": "prompt", "message": "hello again", "id": 2})
    assert reply["success"]
    events = await rpc.client.until(is_type("agent_settled"))
    assert events[-1]["aborted"] is False  # a new run starts with no abort requested
    assert "hello again" in events[-2]["messages"][-1]["content"][0]["text"]
    assert len(rpc.agent.state.messages) == 4


async def test_abort_while_idle_succeeds_and_writes_nothing_else(
    rpc: Harness, autojump_clock: Any
) -> None:
    reply = await rpc.client.command({"type": "abort", "id": 1})
    assert reply == {"id": 1, "type": "response", "command": "abort", "success": True}
    assert rpc.client.seen == [reply]


async def test_a_second_prompt_while_busy_needs_a_streaming_behavior(
    rpc: Harness, autojump_clock: Any
) -> None:
    await rpc.client.command({"type": "prompt", "message": "what time is it?", "id": 1})
    reply = await rpc.client.command({"type": "prompt", "message": "again", "id": 2})
    assert reply["success"] is False and reply["error"] == (
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to "
        "queue the message."
    )
    queued = {"type": "prompt", "message": "then this", "streamingBehavior": "followUp", "id": 3}
    reply = await rpc.client.command(queued)
    assert reply["success"] and reply["data"] == {"disposition": "queued"}
    events = await rpc.client.until(is_type("agent_settled"))
    assert _user_texts(events[-2]["messages"]) == ["what time is it?", "then this"]


_CALL_C1 = (
    b'{"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", '
    b'"arguments": {}}], "api": "faux", "provider": "faux", "model": "m", "usage": {}, '
    b'"stopReason": "toolUse", "timestamp": 0}'
)
_RESULT_C1 = (
    b'{"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [], '
    b'"isError": false, "timestamp": 0}'
)


@pytest.mark.parametrize(
    ("line", "reply_id", "command", "error"),
    [
        (b"not json", None, "parse", "Failed to parse command: Expecting value"),
        (b"\xff\xfe", None, "parse", "Failed to parse command: "),
        (b"[1, 2]", None, "parse", "Failed to parse command: a command must be a JSON object"),
        (b'{"id": 1}', 1, None, "Unknown command: None"),
        (b'{"type": "dance", "id": "x"}', "x", "dance", "Unknown command: dance"),
        (b'{"type": 3, "id": 2}', 2, 3, "Unknown command: 3"),
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
        (b'{"type": "get_state", "id": NaN}', None, "parse", "NaN is not valid JSON"),
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
        (b'{"type": "configure", "id": 14}', 14, "configure", "Unknown command: configure"),
        (b'{"type": "reset", "id": 15}', 15, "reset", "Unknown command: reset"),
        (
            b'{"type": "prompt", "message": "x", "streamingBehavior": "now", "id": 16}',
            16,
            "prompt",
            "streamingBehavior: expected steer or followUp, got 'now'",
        ),
        (  # a result of an aborted call: requests leave the call out, and the result goes alone
            b'{"type": "prompt", "id": 17, "message": [{"role": "assistant", "content": [{"type":'
            b' "toolCall", "id": "c1", "name": "read", "arguments": {}}], "api": "faux", '
            b'"provider": "faux", "model": "m", "usage": {}, "stopReason": "aborted", '
            b'"timestamp": 0}, {"role": "toolResult", "toolCallId": "c1", "toolName": "read", '
            b'"content": [], "isError": false, "timestamp": 0}]}',
            17,
            "prompt",
            "message: a toolResult for 'c1', which no assistant message right before it",
        ),
        (
            b'{"type": "steer", "id": 18, "message": {"role": "toolResult", "toolCallId": "c9", '
            b'"toolName": "read", "content": [], "isError": false, "timestamp": 0}}',
            18,
            "steer",
            "message: a toolResult for 'c9', which no assistant message right before it",
        ),
        (  # answered twice: both results would go to the provider
            b'{"type": "prompt", "id": 19, "message": ['
            + _CALL_C1
            + b", "
            + _RESULT_C1
            + b", "
            + _RESULT_C1
            + b"]}",
            19,
            "prompt",
            "message: a toolResult for 'c1', which no assistant message right before it",
        ),
        (  # after a user message: the request has answered c1 itself by then
            b'{"type": "prompt", "id": 20, "message": [' + _CALL_C1 + b', {"role": "user", '
            b'"content": "hi", "timestamp": 0}, ' + _RESULT_C1 + b"]}",
            20,
            "prompt",
            "message: a toolResult for 'c1', which no assistant message right before it",
        ),
        (  # not ASCII: before, a ValueError the handler did not expect ended the process
            '{"type": "prompt", "id": 21, "message": "hi", "images": [{"type": "image", '
            '"data": "é", "mimeType": "image/png"}]}'.encode(),
            21,
            "prompt",
            "images[0].data: not valid base64",
        ),
        (  # the same image inside a message object: refused the same way
            b'{"type": "prompt", "id": 22, "message": {"role": "user", "content": [{"type": '
            b'"text", "text": "look"}, {"type": "image", "data": "!!!notbase64", "mimeType": '
            b'"image/png"}], "timestamp": 0}}',
            22,
            "prompt",
            "message.content[1].data: not valid base64",
        ),
    ],
)
async def test_malformed_lines_get_an_error_reply_and_lose_nothing(
    rpc: Harness, autojump_clock: Any, line: bytes, reply_id: Any, command: str | None, error: str
) -> None:
    await rpc.client.command({"type": "prompt", "message": "hi", "id": "first"})
    await rpc.client.until(is_type("agent_settled"))
    before = pt.to_json(rpc.agent.state.messages[-1])
    await rpc.client.send(line)
    reply = await rpc.client.receive()
    assert reply["type"] == "response" and reply["success"] is False
    assert reply.get("id") == reply_id and reply["command"] == command
    assert error in reply["error"], reply["error"]
    state = await rpc.client.command({"type": "get_messages", "id": "after"})
    assert len(state["data"]["messages"]) == 2
    assert state["data"]["messages"][-1] == before


async def test_a_lone_surrogate_in_a_command_is_a_replacement_character(
    rpc: Harness, autojump_clock: Any
) -> None:
    # JSON may escape half a surrogate pair; no UTF-8 line can carry it back out (before: the
    # prompt's events were lost, and the next reply killed the process)
    await rpc.client.send(b'{"type":"prompt","message":"hi \\ud800 there","id":1}')
    events = await rpc.client.until(is_type("agent_settled"))
    ends = [e["message"] for e in events if e["type"] == "message_end"]
    assert ends[0]["content"] == [{"type": "text", "text": "hi \ufffd there"}]
    assert ends[-1]["stopReason"] == "stop"
    state = await rpc.client.command({"type": "get_messages", "id": 2})
    assert state["data"]["messages"][0] == ends[0]
    await rpc.client.send(b'{"type": "get_state", "id": "req-\\ud800"}')  # the id as sent
    reply = await rpc.client.receive()
    assert reply["id"] == "req-\ud800" and reply["success"]
    await rpc.client.send(b'{"type": "get_state", "id": {"k": ["\\ud800"]}}')
    reply = await rpc.client.receive()
    assert reply["id"] == {"k": ["\ud800"]} and reply["success"]


def test_a_lone_surrogate_deep_in_a_command_is_replaced_without_recursion() -> None:
    from pi_trio.cli._rpc_json import decode

    deep = decode(b'{"type": "x", "a": ' + b"[" * 900 + b'"\\ud800"' + b"]" * 900 + b"}")
    inner = deep["a"]
    for _ in range(899):
        inner = inner[0]
    assert inner == ["\ufffd"]  # before: "maximum recursion depth exceeded"


def test_a_text_utf8_cannot_carry_is_written_as_its_escape() -> None:
    from pi_trio.cli._rpc_json import encode

    assert encode({"text": "half \ud800 é"}) == b'{"text":"half \\ud800 \\u00e9"}'
    assert encode({"text": "é"}) == '{"text":"é"}'.encode()


async def test_a_prompt_may_bring_tool_calls_with_their_results(
    rpc: Harness, autojump_clock: Any
) -> None:
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}
    turn = {"api": "faux", "provider": "faux", "model": "m", "usage": {}, "timestamp": 0}
    history = [
        {"role": "user", "content": "read it", "timestamp": 0},
        {"role": "assistant", "content": [call], "stopReason": "toolUse", **turn},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False}
        | {"content": [{"type": "text", "text": "the file"}], "timestamp": 0},
    ]
    reply = await rpc.client.command({"type": "prompt", "message": history, "id": 1})
    assert reply["success"], reply
    events = await rpc.client.until(is_type("agent_settled"))
    assert [m["role"] for m in events[-2]["messages"]][:3] == ["user", "assistant", "toolResult"]


async def test_end_of_input_lets_the_running_prompt_finish(autojump_clock: Any) -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    agent = agent_factory("faux", token_delay=0.01)()
    client = JsonLinesClient(client_stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(rpc_session(agent, StreamLines(server_stream)).run)
        await client.command({"type": "prompt", "message": "what time is it?", "id": 1})
        await client_stream.send_stream.aclose()
        events = await client.until(is_type("agent_settled"))
    assert events[-2]["messages"][-1]["stopReason"] == "stop"
    assert not agent.state.is_streaming


async def test_message_updates_carry_the_stream_event_and_usage_as_pi_writes_them(
    rpc: Harness, autojump_clock: Any
) -> None:
    await rpc.client.command({"type": "prompt", "message": "what is 2 + 2?", "id": 1})
    events = await rpc.client.until(is_type("agent_settled"))
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all(list(u) == ["type", "usage", "assistantMessageEvent"] for u in updates)
    assert all("partial" not in u["assistantMessageEvent"] for u in updates)
    for update in updates:
        pt.from_json(update["usage"], pt.Usage)
    [start] = [u for u in updates if u["assistantMessageEvent"]["type"] == "toolcall_start"]
    call = next(e for e in events if e["type"] == "tool_execution_start")
    assert start["assistantMessageEvent"] == {
        "type": "toolcall_start",
        "contentIndex": 1,
        "id": call["toolCallId"],
        "toolName": "calculate",
    }
    ends = [e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
    texts = [[], []]  # the deltas rebuild each assistant message's text
    turn = 0
    for event in events:
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            turn += 1
        elif event["type"] == "message_update":
            stream_event = event["assistantMessageEvent"]
            if stream_event["type"] == "text_delta":
                texts[turn].append(stream_event["delta"])
    assert ["".join(t) for t in texts] == [e["message"]["content"][0]["text"] for e in ends]


async def test_valid_base64_images_are_accepted(rpc: Harness, autojump_clock: Any) -> None:
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    reply = await rpc.client.command(
        {"type": "prompt", "message": "look", "images": [image], "id": 1}
    )
    assert reply["success"], reply
    await rpc.client.until(is_type("agent_settled"))
