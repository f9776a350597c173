"""The log's fast message reader builds exactly what ``pt.from_json`` builds, or defers to it."""

from __future__ import annotations

import json
from typing import Any

import pytest

import pi_trio as pt
from pi_trio.sessions._entries import read_message
from pi_trio.sessions._fast import fast_message

from ..pi_fixtures import FIXTURE_DIR, requires_fixtures

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
