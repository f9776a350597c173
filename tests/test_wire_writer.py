"""pi's JSON is written by functions generated from the records' attrs fields; they write
byte for byte what the plain form (cattrs' generated functions with the tag and the kept keys
added around them) writes, on every object pi recorded."""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs
import pytest

import pi_trio as pt
from pi_trio import _wire_records, wire
from pi_trio._wire_writer import plain_record_writer, record_writer

from .pi_fixtures import requires_fixtures
from .support import recorded_json, with_future_fields


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> wire.WireConverter:
    """A copy of the default converter whose records are written the plain way."""
    monkeypatch.setattr(_wire_records, "record_writer", plain_record_writer)
    return wire.default_converter.copy()


def _text(converter: wire.WireConverter, obj: Any) -> str:
    return json.dumps(converter.to_json(obj), default=repr)  # key order counts; a set as is


@requires_fixtures
@pytest.mark.parametrize("unknown_keys", [False, True], ids=["as-recorded", "unknown-keys"])
def test_generated_writers_write_what_the_plain_form_writes(
    plain: wire.WireConverter, unknown_keys: bool
) -> None:
    kinds: set[str] = set()
    count = 0
    for where, data, type_ in recorded_json():
        obj = pt.from_json(with_future_fields(data, [0]) if unknown_keys else data, type_)
        assert _text(wire.default_converter, obj) == _text(plain, obj), where
        kinds.add(type(obj).__name__)
        count += 1
    assert count > 500
    assert {"AssistantMessage", "ToolResultMessage", "UserMessage", "SystemMessage"} <= kinds
    assert {"MessageEnd", "ToolExecutionEnd", "MessageUpdate", "TurnEnd"} <= kinds


def _records() -> list[Any]:
    """Records whose values take every branch of the generated code: omitted and written
    optional fields, free-form values of every kind, nested records, a union of records."""
    usage = pt.Usage(1, 2, 3, 4, 10, pt.UsageCost(0.5, 1, 0, 0, 1.5), extra={"reasoning": 7})
    call = pt.ToolCall("c", "t", {"a": [1, {"b": None}]}, "sig", namespace="ns")
    return [
        pt.AssistantMessage(
            [pt.ThinkingContent("h", redacted=True), pt.TextContent("t", "ts"), call],
            "api",
            "prov",
            "m",
            usage,
            "toolUse",
            "err",
            5,
            "rid",
            "rm",
            duration_ms=1.5,
            end_turn=False,
            diagnostics={"d": (1, 2)},
        ),
        pt.ToolResultMessage(
            "c", "t", [pt.ImageContent("aGk=", "image/png")], {"set": {1}, "rec": usage}, True
        ),
        pt.ToolResultMessage("c", "t", [], details=pt.TextContent("a record"), usage=usage),
        pt.UserMessage("plain"),
        pt.ToolResult([pt.TextContent("x")], details=(1, 2), terminate=True, usage=usage),
        pt.events.ToolExecutionEnd("c", "t", pt.ToolResult([]), False, duration_ms=3.0),
        pt.events.MessageEnd(pt.coding_messages.BashExecutionMessage("ls", "out", 0, False)),
        pt.Context("sys", [pt.UserMessage("hi")], [pt.Tool("t", "d", {"type": "object"})]),
    ]


@pytest.mark.parametrize("obj", _records(), ids=lambda obj: type(obj).__name__)
def test_generated_writers_on_every_branch(plain: wire.WireConverter, obj: Any) -> None:
    assert _text(wire.default_converter, obj) == _text(plain, obj)


def test_a_free_form_value_too_deep_is_refused_the_same_way(plain: wire.WireConverter) -> None:
    deep: Any = 1
    for _ in range(70):
        deep = [deep]
    message = pt.ToolResultMessage("c", "t", [], details={"x": deep})
    problems = []
    for converter in (wire.default_converter, plain):
        with pytest.raises(pt.WireFormatError) as caught:
            converter.to_json(message)
        problems.append(str(caught.value))
    assert problems[0] == problems[1] and problems[0].startswith("details.x[0]")


def test_every_record_of_the_data_model_is_written_by_a_generated_function() -> None:
    hook = wire.converter.get_unstructure_hook
    for cls in (pt.AssistantMessage, pt.TextContent, pt.ThinkingContent, pt.Usage, pt.ToolCall):
        assert hook(cls).__code__.co_filename.startswith("<pi_trio.wire writer of ")
    assert attrs.has(pt.AssistantMessage)
    plain = plain_record_writer(
        wire.converter, pt.UsageCost, None, frozenset(), "extra", frozenset({"extra"})
    )
    fast = record_writer(
        wire.converter, pt.UsageCost, None, frozenset(), "extra", frozenset({"extra"})
    )
    cost = pt.UsageCost(1, 2, 3, 4, 10, extra={"k": 1})
    assert plain(cost) == fast(cost) == {**wire.to_json(cost)}


class _Topic(enum.StrEnum):
    GREETING = "hello there"


class _Text(str):
    pass


@pytest.mark.parametrize(
    "content",
    [_Topic.GREETING, _Text("a str subclass"), _Text(""), "", {"a": 1}, None, 5, ("t",)],
    ids=["str-enum", "str-subclass", "empty-subclass", "empty", "dict", "none", "int", "tuple"],
)
def test_a_union_s_other_values_are_written_as_cattrs_writes_them(
    plain: wire.WireConverter, content: Any
) -> None:
    """``str | list[...]`` holding what is neither an exact str nor a list: never iterated
    as a list of blocks."""
    message = pt.UserMessage(content, timestamp=1)
    assert repr(wire.to_json(message)) == repr(plain.to_json(message))


def test_a_field_of_another_type_is_a_wire_format_error() -> None:
    message = pt.AssistantMessage([], "api", "prov", "m", usage=None)  # type: ignore[arg-type]
    with pytest.raises(pt.WireFormatError, match="cannot write this AssistantMessage"):
        wire.to_json(message)


def test_every_converter_writes_pi_coding_agent_s_messages_as_pi_does() -> None:
    bash = pt.coding_messages.BashExecutionMessage("ls", "out", timestamp=1)
    expected = {"role": "bashExecution", "command": "ls", "output": "out", "cancelled": False,
                "truncated": False, "timestamp": 1}  # fmt: skip
    assert wire.to_json(bash) == expected
    assert wire.make_converter().to_json(bash) == expected
    assert wire.default_converter.copy().to_json(bash) == expected
