"""The wire format's nesting limit (read and write) and private converters (``make_converter``)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import pi_trio as pt
from pi_trio import wire

LIMIT = wire.DEFAULT_MAX_DEPTH


def nested(levels: int) -> Any:
    """``levels`` arrays inside each other, built the way ``json.loads`` would."""
    return json.loads("[" * levels + "]" * levels)


def tool_result(details: Any) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "t",
        "content": [],
        "isError": False,
        "timestamp": 1,
        "details": details,
    }


def test_the_default_limit_is_documented_and_sane() -> None:
    assert LIMIT == 64
    assert wire.default_converter.max_depth == LIMIT
    assert "max_depth" in (wire.__doc__ or "")


def test_hostile_details_are_refused_on_read_with_the_path() -> None:
    with pytest.raises(pt.WireFormatError) as info:
        pt.from_json(tool_result(nested(500)), pt.AgentMessage)
    text = str(info.value)
    assert text.startswith("details" + "[0]" * LIMIT + ": nested deeper than 64 arrays/objects")
    assert info.value.errors == (text,)


@pytest.mark.parametrize("levels", [LIMIT - 1, LIMIT])
def test_values_up_to_the_limit_round_trip(levels: int) -> None:
    data = tool_result({"a": [1, nested(levels - 2)]})  # the dict and "a" are two levels
    message = pt.from_json(data, pt.AgentMessage)
    assert pt.to_json(message) == data


def test_one_level_past_the_limit_is_refused_on_read() -> None:
    with pytest.raises(pt.WireFormatError) as info:
        pt.from_json(tool_result({"a": [1, nested(LIMIT - 1)]}), pt.AgentMessage)
    assert str(info.value).startswith("details.a[1]" + "[0]" * (LIMIT - 2) + ": nested deeper")


def test_object_keys_make_the_path() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(LIMIT + 5):
        inner["k"] = {}
        inner = inner["k"]
    call = {"type": "toolCall", "id": "c", "name": "n", "arguments": deep}
    with pytest.raises(pt.WireFormatError) as info:
        pt.from_json(call, pt.ToolCall)
    assert str(info.value).startswith("arguments" + ".k" * LIMIT + ": nested deeper")


def test_hostile_details_are_refused_on_write_with_the_path() -> None:
    deep = pt.ToolResultMessage("c1", "t", [], details={"a": nested(500)}, timestamp=1)
    end = pt.AgentEnd([pt.UserMessage("hi", 1), deep])
    with pytest.raises(pt.WireFormatError) as info:
        pt.to_json(end)  # before the limit: RecursionError
    assert str(info.value).startswith("messages[1].details.a" + "[0]" * (LIMIT - 1) + ": nested")
    just_over = pt.ToolResultMessage("c1", "t", [], details=nested(LIMIT + 1), timestamp=1)
    with pytest.raises(pt.WireFormatError, match=r"^details(\[0\]){64}: nested deeper"):
        pt.to_json(just_over)  # before the limit: written, and refused by the reader


def test_non_json_details_are_still_written_through_their_hooks() -> None:
    @attrs.frozen
    class Point:
        x: int
        y: Any = None

    message = pt.ToolResultMessage(
        "c1", "t", [], details={"p": Point(1, [Point(2)]), "t": (1, 2)}, timestamp=1
    )
    details = pt.to_json(message)["details"]
    assert details == {"p": {"x": 1, "y": [{"x": 2, "y": None}]}, "t": [1, 2]}
    with pytest.raises(pt.WireFormatError, match=r"^details\.p\.y\[0\]: nested deeper than 3"):
        wire.make_converter(max_depth=3).to_json(
            pt.ToolResultMessage("c1", "t", [], details={"p": Point(1, [[[]]])}, timestamp=1)
        )


def test_to_json_copies_free_form_values() -> None:
    arguments = {"a": [1, {"b": 2}]}
    data = pt.to_json(pt.ToolCall("c", "n", arguments))
    assert data["arguments"] == arguments
    assert data["arguments"] is not arguments and data["arguments"]["a"] is not arguments["a"]


def test_max_depth_is_per_converter_and_checked() -> None:
    shallow = wire.make_converter(max_depth=2)
    assert shallow.from_json(tool_result({"a": []}), pt.AgentMessage).details == {"a": []}
    with pytest.raises(pt.WireFormatError, match=r"^details\.a\[0\]: nested deeper than 2"):
        shallow.from_json(tool_result({"a": [[]]}), pt.AgentMessage)
    assert pt.from_json(tool_result({"a": [[]]}), pt.AgentMessage).details == {"a": [[]]}
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="max_depth must be a positive integer"):
            wire.make_converter(max_depth=bad)  # type: ignore[arg-type]


# --- private converters ----------------------------------------------------------------------


@attrs.frozen
class Bookmark:
    role = "bookmark"
    label: str
    timestamp: int


def test_registering_on_a_private_converter_leaves_the_default_untouched() -> None:
    private = wire.make_converter()
    private.register_message_type(Bookmark)
    data = {"role": "bookmark", "label": "here", "timestamp": 5}
    assert private.to_json(Bookmark("here", 5)) == data
    assert private.from_json(data, pt.AgentMessage) == Bookmark("here", 5)
    with pytest.raises(pt.WireFormatError, match="unknown role 'bookmark'"):
        pt.from_json(data, pt.AgentMessage)  # the default does not know it
    with pytest.raises(pt.WireFormatError, match="unknown role 'bookmark'"):
        wire.make_converter().from_json(data, pt.AgentMessage)  # nor does a fresh one
    assert pt.to_json(Bookmark("here", 5)) != data  # no role tag: the default has no hook


def test_a_copy_starts_from_what_was_registered_and_then_goes_its_own_way() -> None:
    from pi_trio.proxy import ProxyEvent

    proxy_event = {"type": "text_delta", "contentIndex": 0, "delta": "hi"}
    copied = wire.default_converter.copy(max_depth=8)
    assert copied.max_depth == 8
    assert copied.from_json(proxy_event, ProxyEvent) == pt.from_json(proxy_event, ProxyEvent)
    with pytest.raises(pt.WireFormatError):
        wire.make_converter().from_json(proxy_event, ProxyEvent)  # pi's data model only
    copied.register_message_type(Bookmark)
    again = copied.copy()
    data = {"role": "bookmark", "label": "x", "timestamp": 1}
    assert again.from_json(data, pt.AgentMessage) == Bookmark("x", 1)
    with pytest.raises(pt.WireFormatError, match="unknown role"):
        wire.default_converter.from_json(data, pt.AgentMessage)


def test_the_module_functions_use_the_default_converter() -> None:
    assert wire.converter is wire.default_converter.converter
    assert repr(wire.default_converter) == "<pi_trio.wire.WireConverter max_depth=64>"
    message = pt.UserMessage("hi", 1)
    assert pt.to_json(message) == wire.default_converter.to_json(message)
