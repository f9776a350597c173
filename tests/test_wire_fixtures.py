"""Every message and event pi recorded round-trips through pi_trio's wire format unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest

import pi_trio as pt

from .pi_fixtures import fixture_names, fixture_params, load, requires_fixtures


def _roundtrip(item: Any, cls: Any) -> Any:
    return pt.to_json(pt.from_json(item, cls))


@pytest.mark.parametrize("name", fixture_params())
def test_fixture_round_trips(name: str) -> None:
    data = load(name)
    for key in ("initialMessages", "finalMessages"):
        for message in data[key]:
            assert _roundtrip(message, pt.AgentMessage) == message
    for event in data["events"]:
        if event["type"] == "message_update":
            continue  # trimmed in the recording: only the stream event's type and index
        assert _roundtrip(event, pt.AgentEvent) == event
    for step in data["script"]:
        for block in step["content"]:
            assert _roundtrip(block, pt.AssistantContent) == block


@requires_fixtures
def test_all_fixtures_are_read() -> None:
    assert len(fixture_names()) == 29


def test_round_trip_keeps_key_order_of_tags() -> None:
    message = pt.UserMessage("hi", timestamp=1)
    assert list(pt.to_json(message)) == ["role", "content", "timestamp"]
    assert list(pt.to_json(pt.AgentStart())) == ["type"]


def test_optional_fields_are_omitted_like_pi() -> None:
    message = pt.AssistantMessage(
        content=[pt.TextContent("x"), pt.ThinkingContent("t")],
        api="a",
        provider="p",
        model="m",
        timestamp=5,
    )
    data = pt.to_json(message)
    assert "errorMessage" not in data and "responseId" not in data
    assert data["content"] == [{"type": "text", "text": "x"}, {"type": "thinking", "thinking": "t"}]
    data["errorMessage"] = "boom"
    assert pt.from_json(data, pt.AssistantMessage).error_message == "boom"


def test_stream_events_round_trip() -> None:
    builder = pt.providers.MessageBuilder(pt.get_model("faux", "faux-1"), timestamp=7)
    events: list[Any] = [builder.start(), builder.text_start(), builder.text_delta(0, "he")]
    events.append(builder.text_end(0))
    events.append(builder.tool_call_start("c1", "echo"))
    events.append(builder.tool_call_delta(1, '{"a":1}'))
    events.append(builder.tool_call_end(1))
    events.append(builder.done())
    for event in events:
        data = pt.to_json(event)
        again = pt.from_json(json.loads(json.dumps(data)), pt.StreamEvent)
        assert type(again) is type(event)
        assert pt.to_json(again) == data
    assert pt.to_json(events[-1])["reason"] == "toolUse"


def test_custom_message_round_trip() -> None:
    from .pi_fixtures import Notification

    note = Notification("built", 3)
    data = pt.to_json(note)
    assert data == {"role": "notification", "text": "built", "timestamp": 3}
    assert pt.from_json(data, pt.AgentMessage) == note


def test_model_round_trip() -> None:
    model = pt.get_model("anthropic", "claude-sonnet-4-5")
    data = pt.to_json(model)
    assert data["baseUrl"] == "https://api.anthropic.com"
    assert data["cost"]["cacheWrite"] == 3.75
    assert pt.from_json(data, pt.Model) == model
