"""The log's fast message reader builds exactly what ``pt.from_json`` builds, or defers to it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions._entries import Note, dumps, encode, read_message
from pi_trio.sessions._fast import content_json, fast_message, is_plain_json, message_json

from ..pi_fixtures import FIXTURE_DIR, requires_fixtures
from ._helpers import calls, make_tool

PI16_TRACES = Path(__file__).parents[1] / "data" / "pi16" / "traces.json"

MESSAGES: list[pt.AgentMessage] = [
    pt.UserMessage("plain text", timestamp=5),
    pt.UserMessage([pt.TextContent("look"), pt.ImageContent("aGk=", "image/png")], timestamp=6),
    pt.AssistantMessage(
        [
            pt.ThinkingContent("hmm", thinking_signature="sig", redacted=True),
            pt.TextContent("answer", text_signature="ts"),
            pt.ToolCall("c1", "lookup", {"q": [1, 2.5, None, {"deep": True}]}, "thought"),
        ],
        api="anthropic-messages",
        provider="anthropic",
        model="m",
        usage=pt.Usage(3, 4, 1, 2, 10, pt.UsageCost(0.1, 0.2, 0, 0.05, 0.35)),
        stop_reason="toolUse",
        timestamp=7,
        response_id="r1",
        response_model="m-2024",
    ),
    pt.AssistantMessage(
        [], api="x", provider="y", model="z", stop_reason="error", error_message="boom"
    ),
    pt.ToolResultMessage(
        "c1",
        "lookup",
        [pt.TextContent("found"), pt.ImageContent("aGk=", "image/jpeg")],
        details={"rows": [1, 2], "interrupted": None},
        is_error=False,
        timestamp=8,
    ),
    pt.ToolResultMessage("c2", "lookup", [pt.TextContent("no")], is_error=True, timestamp=9),
]


def _both(data: Any) -> tuple[Any, Any]:
    return fast_message(data), pt.from_json(data, pt.AgentMessage)  # type: ignore[arg-type]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.role)
def test_fast_reader_equals_from_json(message: pt.AgentMessage) -> None:
    data = json.loads(json.dumps(pt.to_json(message)))
    fast, slow = _both(data)
    assert fast is not None
    assert fast == slow == message
    assert pt.to_json(fast) == data  # and it writes back the same JSON


@requires_fixtures
def test_fast_reader_on_pi_s_recorded_transcripts() -> None:
    count = 0
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        for item in json.loads(path.read_text()).get("finalMessages") or []:
            fast, slow = _both(item)
            if fast is not None:
                assert fast == slow, path.name
                count += 1
    assert count > 50


@pytest.mark.parametrize(
    "data",
    [
        {"role": "note", "text": "a custom message"},
        {"role": "user", "content": "x", "timestamp": 1, "extra": 1},
        {"role": "user", "content": "x", "timestamp": 1.0},
        {"role": "user", "content": "x", "timestamp": True},
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "t",
            "content": [],
            "isError": False,
            "timestamp": 1,
            "details": float("nan"),
        },
        {"role": "assistant", "content": "not a list"},
    ],
)
def test_unusual_shapes_go_to_from_json(data: dict[str, Any]) -> None:
    assert fast_message(data) is None
    try:
        expected: Any = pt.from_json(data, pt.AgentMessage)  # type: ignore[arg-type]
    except pt.WireFormatError as exc:
        with pytest.raises(pt.SessionLogError, match="entry seq 3: not a pi message") as caught:
            read_message("s", 3, data)
        assert str(exc) in caught.value.problem
    else:
        assert read_message("s", 3, data) == expected


# --- the fast writer ------------------------------------------------------------------------

WRITTEN: list[pt.AgentMessage] = [
    *MESSAGES,
    pt.UserMessage([], timestamp=1),
    pt.AssistantMessage(
        [pt.ThinkingContent("plain"), pt.TextContent("t")], api="a", provider="p", model="m"
    ),
    pt.ToolResultMessage("c3", "t", [], details={"deep": [[[{"x": 1.5}]]], "é": "ü"}),
    pt.ToolResultMessage("c4", "t", [pt.TextContent("x")], details=[1, "two", False, None]),
]


@pytest.mark.parametrize("message", WRITTEN, ids=lambda m: m.role)
def test_fast_writer_equals_to_json(message: pt.AgentMessage) -> None:
    written = message_json(message)
    assert written is not None
    assert written == pt.to_json(message)
    assert dumps(written) == dumps(pt.to_json(message))  # the same key order too


@requires_fixtures
def test_fast_writer_on_pi_s_recorded_transcripts() -> None:
    count = 0
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        for item in json.loads(path.read_text()).get("finalMessages") or []:
            message = pt.from_json(item, pt.AgentMessage)  # type: ignore[arg-type]
            written = message_json(message)
            if written is not None:
                assert dumps(written) == dumps(pt.to_json(message)), path.name
                count += 1
    assert count > 50


def _logged(message: pt.AgentMessage) -> str:
    """The data text the log stores for ``message``."""
    return encode(Note(1, "message", message, 0))[2]


def _fixture_messages() -> list[pt.AgentMessage]:
    items: list[Any] = []
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        items.extend(json.loads(path.read_text()).get("finalMessages") or [])
    items.extend(json.loads(PI16_TRACES.read_text())["messages"])
    return [pt.from_json(item, pt.AgentMessage) for item in items]  # type: ignore[arg-type]


@requires_fixtures
@pytest.mark.parametrize("source", ["written", "fixtures"])
def test_an_entry_is_pt_to_json_and_reads_back_as_written(source: str) -> None:
    """Every message of pi 0.73.1's fixtures and pi 1.6's traces: the log's bytes (the fast
    writer's where it takes the message) are ``pt.to_json``'s JSON, and resume reads them
    back into an equal message."""
    messages = WRITTEN if source == "written" else _fixture_messages()
    assert source == "written" or len(messages) > 50
    for message in messages:
        text = _logged(message)
        assert text == dumps(pt.to_json(message))  # the same keys in the same order
        assert read_message("s", 1, json.loads(text)) == pt.from_json(
            json.loads(text),
            pt.AgentMessage,  # type: ignore[arg-type]
        )


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "details",
    [
        {"when": {1, 2}},  # not JSON: to_json's hooks decide
        {1: "an int key"},
        {"nan": float("nan")},
        (1, 2),
        _nested(40),  # deeper than the fast writer goes: to_json's depth limit applies
        pt.TextContent("a record"),
    ],
    ids=["set", "int-key", "nan", "tuple", "deep", "record"],
)
def test_unusual_free_form_values_go_to_to_json(details: Any) -> None:
    message = pt.ToolResultMessage("c", "t", [pt.TextContent("x")], details=details)
    assert not is_plain_json(details)
    assert message_json(message) is None
    assert (
        message_json(pt.AssistantMessage([pt.ToolCall("c", "t", {"a": details})], "a", "p", "m"))
        is None
    )
    assert content_json([pt.TextContent("x"), pt.ToolCall("c", "t")]) is None


class _Custom(pt.UserMessage):
    pass


def test_a_subclass_goes_to_to_json() -> None:
    assert message_json(_Custom("hi", timestamp=1)) is None
    assert message_json(pt.UserMessage("hi", timestamp=1)) is not None


async def _plain(call_id: str, params: Any, on_update: Any) -> str:
    return "plain"  # details None


async def _detailed(call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.lowlevel.checkpoint()
    content: list[pt.TextContent | pt.ImageContent] = [
        pt.TextContent('seen "é"'),
        pt.ImageContent("aGk=", "image/png"),
    ]
    return pt.ToolResult(content, details={"n": params["n"], "list": [1.5, None, True]})


async def test_logged_entries_are_the_text_pi_s_json_encodes_to(tmp_path: Path) -> None:
    # tool-result messages ride on their tool_result's commit with a text built from its
    # pieces: byte for byte what encoding the message itself gives
    path = tmp_path / "agents.db"
    scripted = faux.FauxModel([calls("plain", "detailed", "plain"), faux.assistant_message("ok")])
    tools = [make_tool("plain", _plain), make_tool("detailed", _detailed)]
    async with (
        pt.open_session_store(path) as store,
        store.open_agent(
            "s", initial_state=pt.AgentState(model=scripted.model, tools=tools), stream_fn=scripted
        ) as agent,
    ):
        await agent.prompt("go")
    db = sqlite3.connect(path)
    try:
        logged = db.execute("SELECT kind, data FROM pi_trio_entries ORDER BY seq").fetchall()
    finally:
        db.close()
    results = [text for kind, text in logged if kind == "tool_result"]
    messages = [text for kind, text in logged if kind == "message"]
    assert len(results) == 3 and len(messages) == 6
    for text in results:
        assert text == dumps(json.loads(text))
    for text in messages:
        message = pt.from_json(json.loads(text), pt.AgentMessage)  # type: ignore[arg-type]
        assert text == dumps(pt.to_json(message))
