"""Bad JSON raises one WireFormatError that names the path; nothing else ever escapes."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pi_trio as pt

from .pi_fixtures import fixture_names, load, requires_fixtures


@pytest.mark.parametrize(
    ("data", "cls", "expected"),
    [
        ({"role": "user", "content": [{"type": "img"}], "timestamp": 1}, pt.AgentMessage,
         "content[0].type: unknown type 'img'"),
        ({"role": "user", "content": "x", "timestamp": "now"}, pt.AgentMessage,
         "timestamp: expected an integer, got string"),
        ({"role": "robot"}, pt.AgentMessage, "role: unknown role 'robot'"),
        ({"type": "turn_end", "message": {"role": "user", "content": "x", "timestamp": 1}},
         pt.AgentEvent, "toolResults: required field missing"),
        ({"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": [],
          "isError": "no", "timestamp": 1}, pt.Message, "isError: expected a boolean"),
        ({"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
          "usage": {}, "stopReason": "halt", "timestamp": 1}, pt.AgentMessage,
         "stopReason: expected one of"),
        ({"type": "tool_execution_start", "toolCallId": "c", "toolName": "t",
          "args": {"x": [1, math.nan]}}, pt.AgentEvent, "args.x[1]: not a JSON number"),
        ([1, 2], pt.AgentEvent, "(root): expected an object, got array"),
    ],
)  # fmt: skip
def test_error_names_the_path(data: Any, cls: Any, expected: str) -> None:
    with pytest.raises(pt.WireFormatError) as info:
        pt.from_json(data, cls)
    assert expected in str(info.value)
    assert all(":" in problem for problem in info.value.errors)


def test_all_problems_are_listed() -> None:
    data = {
        "role": "user",
        "content": [{"type": "text", "text": 1}, {"type": "x"}],
        "timestamp": "t",
    }
    with pytest.raises(pt.WireFormatError) as info:
        pt.from_json(data, pt.AgentMessage)
    assert len(info.value.errors) == 3


def test_unknown_keys_are_kept_not_refused() -> None:
    data = {"role": "user", "content": "hi", "timestamp": 1, "futureField": {"a": 1}}
    message = pt.from_json(data, pt.AgentMessage)
    assert message == pt.UserMessage("hi", 1, extra={"futureField": {"a": 1}})
    assert pt.to_json(message) == data


def test_wire_format_error_is_a_pi_error() -> None:
    assert issubclass(pt.WireFormatError, pt.PiError)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)

KEYS = [
    *("role", "type", "content", "text", "timestamp", "message", "messages", "toolResults"),
    *("arguments", "usage", "stopReason", "toolCallId", "isError", "result", "args", "id"),
]

TARGETS = [pt.AgentMessage, pt.AgentEvent, pt.StreamEvent, pt.Message, pt.AssistantMessage]


def _check(data: Any, cls: Any) -> None:
    try:
        pt.from_json(data, cls)
    except pt.WireFormatError as exc:
        problems = exc.errors
        assert problems and all(": " in problem for problem in problems), problems


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=json_values, cls=st.sampled_from(TARGETS))
def test_random_json_only_raises_wire_format_error(data: Any, cls: Any) -> None:
    _check(data, cls)


_SAMPLES = [
    item
    for name in fixture_names()[:12]
    for item in load(name)["events"] + load(name)["finalMessages"]
    if item.get("type") != "message_update"
]


def _mutate(value: Any, draw: Any) -> Any:
    """Replace, delete or retag one nested spot of ``value``."""
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        action = draw(st.sampled_from(["replace", "delete", "recurse", "retag"]))
        if action == "delete":
            del value[key]
        elif action == "replace":
            value[key] = draw(json_values)
        elif action == "retag":
            value[draw(st.sampled_from(KEYS))] = draw(json_values)
        else:
            value[key] = _mutate(value[key], draw)
        return value
    if isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        value[i] = _mutate(value[i], draw)
        return value
    return draw(json_values)


@pytest.mark.slow  # thousands of mutated documents
@requires_fixtures
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_pi_json_only_raises_wire_format_error(data: st.DataObject) -> None:
    item = copy.deepcopy(data.draw(st.sampled_from(_SAMPLES)))
    for _ in range(data.draw(st.integers(1, 3))):
        item = _mutate(item, data.draw)
    cls = pt.AgentEvent if isinstance(item, dict) and "type" in item else pt.AgentMessage
    _check(item, cls)
