"""pi 1.6's own ``RpcClient`` drives ``pi-trio rpc``: a prompt with tool calls, steering and
follow-ups, an abort in the middle of a slow tool, the state and the transcript, a second
session and back. Every event it saw must read as pi's JSON (``tests/pi16/rpc_client_drive.mjs``
drives it through ``pi_trio_rpc_shim.mjs``, which runs this interpreter's ``-m pi_trio rpc``)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

import pi_trio as pt

from ..pi_node import run_node
from ._helpers import ROOT, SESSION_EVENTS

pytestmark = pytest.mark.slow  # Node and a pi-trio process, about 3 seconds

STREAM_EVENTS = {
    "start", "text_start", "text_delta", "text_end", "thinking_start", "thinking_delta",
    "thinking_end", "toolcall_start", "toolcall_delta", "toolcall_end", "done", "error",
}  # fmt: skip


@pytest.fixture(scope="module")
def drive() -> dict[str, Any]:
    config = {
        "command": [sys.executable, "-m", "pi_trio", "rpc"],
        "cwd": str(ROOT),
        "args": ["--delay", "0.002"],
    }
    done = run_node("rpc_client_drive.mjs", json.dumps(config), timeout=90)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _step(drive: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The events the client saw during one step of the drive."""
    names = list(drive["marks"])
    start = drive["marks"][name]
    following = names[names.index(name) + 1 :]
    end = drive["marks"][following[0]] if following else len(drive["events"])
    return drive["events"][start:end]  # type: ignore[no-any-return]


def _kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] not in ("message_update", "queue_update")]


def _user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"][0]["text"] for m in messages if m["role"] == "user"]


def test_every_event_reads_as_pi_json(drive: dict[str, Any]) -> None:
    for event in [dict(e) for e in drive["events"]]:
        kind = event["type"]
        if kind == "message_update":
            assert list(event) == ["type", "usage", "assistantMessageEvent"]
            pt.from_json(event["usage"], pt.Usage)
            assert event["assistantMessageEvent"]["type"] in STREAM_EVENTS
            assert "partial" not in event["assistantMessageEvent"]
        elif kind == "agent_settled":
            assert set(event) == {"type", "aborted"} and isinstance(event["aborted"], bool)
        elif kind == "queue_update":
            assert set(event) == {"type", "steering", "followUp"}
        else:
            assert kind not in SESSION_EVENTS
            if kind == "agent_end":
                assert event["willRetry"] is False  # the session's field on pi's agent_end
            # pi's JSON, read back unchanged (willRetry kept as a field pi_trio does not model)
            assert pt.to_json(pt.from_json(event, pt.AgentEvent)) == event


def test_a_prompt_with_a_tool_call(drive: dict[str, Any]) -> None:
    assert drive["results"]["tools"] == {"disposition": "started"}
    events = _step(drive, "tools")
    assert _kinds(events) == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "tool_execution_start", "tool_execution_end",
        "message_start", "message_end", "turn_end",
        "turn_start", "message_start", "message_end", "turn_end", "agent_end", "agent_settled",
    ]  # fmt: skip
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert (end["toolName"], end["result"]["content"][0]["text"]) == ("calculate", "42")
    assert events[-1] == {"type": "agent_settled", "aborted": False}


def test_steer_follow_up_and_a_prompt_queued_while_streaming(drive: dict[str, Any]) -> None:
    queues = drive["results"]["queues"]
    assert queues["disposition"] == "started"
    assert (queues["steer"], queues["followUp"], queues["queuedPrompt"]) == ("queued",) * 3
    assert queues["refused"].startswith("Agent is already processing.")
    assert queues["during"]["isStreaming"] is True
    assert queues["during"]["pendingMessageCount"] == 3
    events = _step(drive, "queues")
    updates = [(e["steering"], e["followUp"]) for e in events if e["type"] == "queue_update"]
    assert updates == [
        (["steered"], []),
        (["steered"], ["followed"]),
        (["steered"], ["followed", "queued by prompt"]),
        ([], ["followed", "queued by prompt"]),
        ([], ["queued by prompt"]),
        ([], []),
    ]
    assert [e["type"] for e in events].count("agent_settled") == 1  # one run took them all
    final = [e for e in events if e["type"] == "agent_end"][-1]["messages"]
    assert _user_texts(final) == ["wait 0.3", "steered", "followed", "queued by prompt"]


def test_state_messages_stats_and_entries(drive: dict[str, Any]) -> None:
    results = drive["results"]["state"]
    state, messages = results["state"], results["messages"]
    assert set(state) == {
        "model", "thinkingLevel", "isStreaming", "isCompacting", "steeringMode",
        "followUpMode", "sessionId", "autoCompactionEnabled", "messageCount",
        "pendingMessageCount",
    }  # fmt: skip
    assert (state["model"]["provider"], state["model"]["id"]) == ("faux", "faux-1")
    assert state["isStreaming"] is False and state["pendingMessageCount"] == 0
    assert state["messageCount"] == len(messages) == 13
    for message in messages:
        pt.from_json(message, pt.AgentMessage)
    stats = results["stats"]
    assert (stats["userMessages"], stats["assistantMessages"]) == (5, 6)
    assert (stats["toolCalls"], stats["toolResults"], stats["totalMessages"]) == (2, 2, 13)
    entries = results["entries"]
    assert [e["message"] for e in entries["entries"]] == messages
    assert entries["entries"][0]["parentId"] is None
    assert [e["parentId"] for e in entries["entries"][1:]] == [
        e["id"] for e in entries["entries"][:-1]
    ]
    assert entries["leafId"] == entries["entries"][-1]["id"]
    assert results["lastText"].startswith("You said: 'queued by prompt'.")
    assert results["levels"] == ["off"]


def test_abort_in_the_middle_of_a_slow_tool(drive: dict[str, Any]) -> None:
    events = _step(drive, "abort")
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["toolName"] == "wait" and end["isError"] is True
    assert events[-1] == {"type": "agent_settled", "aborted": True}
    last = [e for e in events if e["type"] == "agent_end"][-1]["messages"][-1]
    assert last["stopReason"] == "aborted"
    assert drive["results"]["abort"]["after"]["isStreaming"] is False  # abort waits for it


def test_a_second_session_and_back(drive: dict[str, Any]) -> None:
    sessions = drive["results"]["sessions"]
    assert sessions["created"] == {"cancelled": False} == sessions["switched"]
    first, second, back = sessions["first"], sessions["second"], sessions["back"]
    assert second["sessionId"] != first["sessionId"] and second["messageCount"] == 0
    assert [m["role"] for m in sessions["secondMessages"]] == [
        "user", "assistant", "toolResult", "assistant",
    ]  # fmt: skip
    assert back["sessionId"] == first["sessionId"]
    assert back["messageCount"] == first["messageCount"]  # the first session as it was
    since = sessions["since"]["entries"]
    assert len(since) == first["messageCount"] - 2 and since[0]["id"] == "00000002"


def test_a_coding_agent_command_is_refused_in_pi_s_shape(drive: dict[str, Any]) -> None:
    error = drive["results"]["unsupported"]["error"]
    assert error.startswith("bash is not supported by pi-trio: ")
