"""pi-coding-agent's message roles (compactionSummary, branchSummary, custom, bashExecution):
read and written as pi's JSON, and shown to the model by the default ``convert_to_llm`` as pi's
``convertToLlm`` shows them (each a user message at its own timestamp)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

import pi_trio as pt
from pi_trio.loop._transcript import Transcript

from .support import make_scripted_agent

# As pi 1.6's buildSessionContext prints them (tests/pi16/session_context.mjs).
PI_JSON: list[dict[str, Any]] = [
    {"role": "compactionSummary", "summary": "Earlier: files listed.", "tokensBefore": 12345,
     "timestamp": 1796336476492},
    {"role": "branchSummary", "summary": "Tried Rust.", "fromId": "45d84811",
     "timestamp": 1796336476494},
    {"role": "custom", "customType": "reminder", "content": "Run the tests.", "display": True,
     "details": {"level": 1}, "timestamp": 1796336476494},
    {"role": "custom", "customType": "img", "content": [{"type": "text", "text": "see"}],
     "display": False, "timestamp": 5},
    {"role": "bashExecution", "command": "pytest -q", "output": "2 passed", "exitCode": 0,
     "cancelled": False, "truncated": False, "timestamp": 1796029209000},
    {"role": "bashExecution", "command": "ls", "output": "", "cancelled": True,
     "truncated": True, "fullOutputPath": "/tmp/out.txt", "timestamp": 7,
     "excludeFromContext": False},
]  # fmt: skip


@pytest.mark.parametrize("data", PI_JSON, ids=lambda d: f"{d['role']}-{d['timestamp']}")
def test_pi_json_of_each_role_round_trips(data: dict[str, Any]) -> None:
    message = pt.from_json(data, pt.AgentMessage)
    assert message.role == data["role"]
    assert pt.to_json(message) == data


def test_the_contract_names_and_fields() -> None:
    summary = pt.CompactionSummary("s", 10, 3)
    assert (summary.summary, summary.tokens_before, summary.timestamp) == ("s", 10, 3)
    assert pt.to_json(summary) == {
        "role": "compactionSummary",
        "summary": "s",
        "tokensBefore": 10,
        "timestamp": 3,
    }
    assert pt.wire.carries_message(summary)  # a durable session can log it


def _text(message: pt.Message) -> str:
    assert isinstance(message, pt.UserMessage)
    content = message.content
    assert isinstance(content, list)
    return "".join(block.text for block in content if isinstance(block, pt.TextContent))


def test_the_default_convert_to_llm_shows_each_as_a_user_message() -> None:
    messages = [pt.from_json(data, pt.AgentMessage) for data in PI_JSON]
    seen = pt.default_convert_to_llm(messages)
    assert all(isinstance(m, pt.UserMessage) for m in seen)
    assert [m.timestamp for m in seen] == [d["timestamp"] for d in PI_JSON]
    compaction, branch, reminder, image, bash, cancelled = seen
    assert "<summary>\nEarlier: files listed.\n</summary>" in _text(compaction)
    assert "compacted" in _text(compaction)
    assert "<summary>\nTried Rust.\n</summary>" in _text(branch)
    assert "branch" in _text(branch)
    assert reminder.content == [pt.TextContent("Run the tests.")]  # a text becomes a block
    assert image.content == [pt.TextContent("see")]  # shown even when not displayed
    assert "`pytest -q`" in _text(bash) and "2 passed" in _text(bash)
    assert "exited" not in _text(bash)
    assert "cancelled" in _text(cancelled) and "/tmp/out.txt" in _text(cancelled)


def test_a_shell_command_excluded_from_context_and_an_apps_own_message_are_not_shown() -> None:
    @attrs.define
    class Note:
        role: str = "note"

    hidden = pt.BashExecutionMessage("secret", "x", exclude_from_context=True, timestamp=1)
    user = pt.UserMessage("hi", timestamp=2)
    assert pt.default_convert_to_llm([hidden, Note(), user]) == [user]
    failed = pt.BashExecutionMessage("false", "", exit_code=1, timestamp=3)
    assert "status 1" in _text(pt.default_convert_to_llm([failed])[0])


def test_the_incremental_view_converts_them_as_they_end() -> None:
    first = pt.UserMessage("one", timestamp=1)
    transcript = Transcript([first], incremental_llm=True)
    summary = pt.BranchSummary("went elsewhere", "abc", timestamp=2)
    transcript.end(summary)  # the first non-model message: the view becomes a copy
    extension = pt.ExtensionMessage("note", "from an extension", timestamp=3)
    transcript.end(extension)  # converted as it ends, into the copy
    view = list(transcript.llm_view() or ())
    assert view == pt.default_convert_to_llm([first, summary, extension])
    assert view[2] == pt.UserMessage([pt.TextContent("from an extension")], timestamp=3)
    started = Transcript([pt.CompactionSummary("b", 5, timestamp=4), first], incremental_llm=True)
    assert [m.role for m in started.llm_view() or ()] == ["user", "user"]


async def test_a_run_sends_the_summary_to_the_model_as_a_user_message() -> None:
    summary = pt.CompactionSummary("The user wants tests.", 900, timestamp=1)
    agent, scripted = make_scripted_agent(
        [pt.faux.assistant_message("ok")], messages=[summary], tools=()
    )
    with trio.fail_after(5):
        await agent.prompt("go on")
    sent = scripted.calls[0].context.messages
    assert [m.role for m in sent] == ["user", "user"]
    assert "The user wants tests." in _text(sent[0])
    assert agent.state.messages[0] is summary  # the transcript keeps the summary itself


def test_a_newer_pi_s_unknown_fields_of_coding_messages_are_kept() -> None:
    for data in (
        {"role": "compactionSummary", "summary": "s", "tokensBefore": 9, "timestamp": 1,
         "zzFuture": {"a": [1]}},
        {"role": "branchSummary", "summary": "s", "fromId": "e1", "timestamp": 1, "zz": 1},
        {"role": "custom", "customType": "note", "content": "hi", "display": True,
         "timestamp": 1, "zz": None},
    ):  # fmt: skip
        assert pt.to_json(pt.from_json(data, pt.AgentMessage)) == data
