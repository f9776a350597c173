"""``pt.from_json`` reads plain JSON through a reader generated from the record's attrs fields
and leaves anything else to its checked path: where both read a value they build equal
objects, on every object pi recorded; the reader takes all of pi's plain messages and events;
what it does not take, the checked path reads or refuses with its own messages."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import pi_trio as pt

from .pi_fixtures import requires_fixtures
from .support import MISSED, SAMPLE_MESSAGES, fast_and_checked, recorded_json, with_future_fields


@pytest.mark.parametrize("message", SAMPLE_MESSAGES, ids=lambda m: m.role)
def test_the_reader_builds_what_the_checked_path_builds(message: pt.AgentMessage) -> None:
    data = json.loads(json.dumps(pt.to_json(message)))
    fast, checked = fast_and_checked(data, pt.AgentMessage)
    assert fast == checked == message
    assert pt.to_json(fast) == data  # and it writes back the same JSON


@requires_fixtures
def test_the_reader_takes_every_plain_object_pi_recorded() -> None:
    count = 0
    for where, data, type_ in recorded_json():
        fast, checked = fast_and_checked(data, type_)
        if type(checked) is type and issubclass(checked, Exception):
            pytest.fail(f"{where}: the checked path refuses {data!r}")
        if fast is MISSED:  # only kept keys (a newer pi's fields) or records read by hand
            assert set(data) - _modelled(checked) or _hand_read(checked), where
        else:
            assert fast == checked, where
            count += 1
    assert count > 500


def _modelled(obj: Any) -> set[str]:
    return set(pt.to_json(obj)) - set(getattr(obj, "extra", None) or ())


def _hand_read(obj: Any) -> bool:
    """Records whose reading is written by hand (system messages, compaction events)."""
    return isinstance(obj, pt.SystemMessage | pt.CompactionStart | pt.CompactionEnd)


@requires_fixtures
def test_with_a_newer_pi_s_keys_the_checked_path_reads_them() -> None:
    for where, data, type_ in recorded_json():
        future = with_future_fields(data, [0])
        fast, checked = fast_and_checked(future, type_)
        assert fast is MISSED or _hand_read(checked), where
        assert pt.from_json(future, type_) == checked, where


@pytest.mark.parametrize(
    "data",
    [
        {"role": "note", "text": "a custom message"},
        {"role": "user", "content": "x", "timestamp": 1, "extra": 1},
        {"role": "user", "content": "x", "timestamp": 1.0},  # an integer, written as a float
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
        {"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
         "stopReason": None},
        {"role": "user", "content": [{"type": "img"}], "timestamp": 1},
        ["not", "an", "object"],
    ],
)  # fmt: skip
def test_unusual_shapes_are_left_to_the_checked_path(data: Any) -> None:
    fast, checked = fast_and_checked(data, pt.AgentMessage)
    assert fast is MISSED
    try:
        read = pt.from_json(data, pt.AgentMessage)
    except pt.WireFormatError:
        assert type(checked) is type and issubclass(checked, Exception)
    else:
        assert read == checked


def test_a_registered_message_type_is_read_by_its_own_reader() -> None:
    @attrs.define
    class Note:
        role = "note"
        text: str
        timestamp: int = 0

    wire = pt.wire.make_converter()
    wire.register_message_type(Note)
    data = {"role": "note", "text": "hi", "timestamp": 3}
    reader = wire.converter.readers.reader(pt.AgentMessage)
    assert reader is not None and reader(data) == Note("hi", 3)
    assert wire.from_json(data, pt.AgentMessage) == Note("hi", 3)
    with pytest.raises(pt.WireFormatError, match="text: expected a string"):
        wire.from_json({"role": "note", "text": 1}, pt.AgentMessage)


_VALIDATED: list[object] = []


def _runs_out_of_memory(instance: object, attribute: object, value: object) -> None:
    _VALIDATED.append(value)
    raise MemoryError


@attrs.define
class _Item:
    n: int = attrs.field(validator=_runs_out_of_memory)


@pytest.mark.parametrize(
    ("items", "data"),
    [
        (_Item, {"n": 1}),
        (dict[str, _Item], {"a": {"n": 1}}),
        (_Item, {"n": 1, "newer": 1}),  # an unknown key: the checked path reads it
    ],
    ids=["record", "dict-of-records", "unknown-key"],
)
def test_running_out_of_memory_while_reading_is_not_a_format_error(
    items: Any, data: dict[str, Any]
) -> None:
    """The MemoryError comes out as itself, not inside or beside the group of errors cattrs
    makes, and the application's validator runs once (nothing is read a second time)."""

    note = attrs.make_class("Note", {"x": attrs.field(type=items)})  # a type chosen at run time
    note.role = "note"  # type: ignore[attr-defined]
    wire = pt.wire.make_converter()
    wire.register_message_type(note)
    _VALIDATED.clear()
    with pytest.raises(MemoryError) as raised:
        wire.from_json({"role": "note", "x": data}, pt.AgentMessage)
    assert _VALIDATED == [1]
    assert raised.value.__context__ is None


_ODD_VALUES = [None, True, 0, 1.5, float("inf"), "x", "", [], {}, [1], {"a": 1}, 2**70]


def _mutations(data: Any) -> list[Any]:
    """``data`` with one value anywhere in it replaced, one key dropped, or one key added."""
    found: list[Any] = []
    if isinstance(data, dict):
        for key, value in data.items():
            for odd in _ODD_VALUES:
                found.append({**data, key: odd})
            found.append({k: v for k, v in data.items() if k != key})
            found.extend({**data, key: inner} for inner in _mutations(value))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found.extend([*data[:index], inner, *data[index + 1 :]] for inner in _mutations(value))
    return found


@pytest.mark.parametrize("message", SAMPLE_MESSAGES, ids=lambda m: m.role)
def test_the_reader_never_takes_what_the_checked_path_refuses(message: pt.AgentMessage) -> None:
    """Every one-place change of a message's JSON (hostile or newer input): where the reader
    takes it, the checked path takes it too and builds the same message."""
    data = json.loads(json.dumps(pt.to_json(message)))
    changed = _mutations(data)
    assert len(changed) > 20
    taken = 0
    for item in changed:
        fast, checked = fast_and_checked(item, pt.AgentMessage)
        if fast is not MISSED:
            if "timestamp" not in item:  # each read it from the clock, maybe a tick apart
                fast = attrs.evolve(fast, timestamp=getattr(checked, "timestamp", None))
            assert fast == checked, item
            taken += 1
    assert taken > 0


@attrs.define
class Attachment:
    file_name: str


@attrs.define
class Memo:
    role = "memo"
    attachment: Attachment
    timestamp: int = 0


def test_a_record_registered_after_the_one_holding_it_is_read_as_the_checked_path_reads_it() -> (
    None
):
    wire = pt.wire.make_converter()
    wire.register_message_type(Memo)  # holds Attachment's hooks of now (cattrs' defaults)
    wire.register_records(Attachment)
    written = wire.to_json(Memo(Attachment("f"), 1))
    assert wire.from_json(written, pt.AgentMessage) == Memo(Attachment("f"), 1)
    camel = {"role": "memo", "attachment": {"fileName": "f"}, "timestamp": 1}
    with pytest.raises(pt.WireFormatError, match="required field missing"):
        wire.from_json(camel, pt.AgentMessage)  # as the checked path: not read either way
