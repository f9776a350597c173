"""Tool-call arguments as they stream in: what models get wrong inside strings is repaired as
pi-ai repairs it (a raw line break, a backslash that starts no escape: a regex's ``\\d``),
a long argument streamed in small pieces is parsed a bounded number of times (linear, not
quadratic, in its length), and a call the stream never ended keeps all the JSON that came."""

from __future__ import annotations

import json
from typing import Any

import pytest

import pi_trio as pt
from pi_trio.providers import MessageBuilder, _builder
from pi_trio.providers._partial_json import parse_partial_json

MODEL = pt.get_model("faux", "faux-1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"path": "a.txt", "content": "line1\nline2\ttab"}',
            {"path": "a.txt", "content": "line1\nline2\ttab"},
        ),
        ('{"pattern": "\\d+\\.\\w", "n": 1}', {"pattern": "\\d+\\.\\w", "n": 1}),
        ('{"path": "C:\\\\temp", "q": "say \\"hi\\""}', {"path": "C:\\temp", "q": 'say "hi"'}),
        ('{"a": "\\u0041\\z"}', {"a": "A\\z"}),
        ('{"pattern": "\\d+', {"pattern": "\\d+"}),  # cut off mid-stream
        ('{"a": "x\\', {"a": "x"}),  # an escape not finished yet
    ],
)
def test_strings_models_get_wrong_are_repaired(text: str, expected: dict[str, Any]) -> None:
    assert parse_partial_json(text) == expected
    builder = MessageBuilder(MODEL)
    index = builder.tool_call_start("c1", "grep").content_index
    builder.tool_call_delta(index, text)
    assert builder.tool_call_end(index).tool_call.arguments == expected


def test_a_long_argument_in_small_pieces_is_parsed_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parses: list[int] = []

    def counting(text: str, **options: Any) -> dict[str, Any]:
        parses.append(len(text))
        return parse_partial_json(text, **options)

    monkeypatch.setattr(_builder, "parse_partial_json", counting)
    content = "x" * 100_000
    text = json.dumps({"path": "big.txt", "content": content})
    builder = MessageBuilder(MODEL)
    index = builder.tool_call_start("c1", "write").content_index
    seen = []
    for start in range(0, len(text), 40):  # 2,500 pieces
        event = builder.tool_call_delta(index, text[start : start + 40], parse_partial=True)
        seen.append(dict(event.partial.content[index].arguments))
    assert seen[0] == {"path": "big.txt", "content": "x" * 8}  # parsed as it streams
    assert len(seen[-1]["content"]) > 80_000  # and not left far behind
    assert len(parses) < 260  # every piece up to 8 KiB (205), then at each growth by a quarter
    assert sum(parses) < 2_000_000  # characters parsed; before: 2,500 parses, 125 M
    assert builder.tool_call_end(index).tool_call.arguments["content"] == content


def test_a_call_the_stream_never_ended_keeps_all_its_json() -> None:
    text = json.dumps({"path": "a.txt", "content": "y" * 50_000})
    builder = MessageBuilder(MODEL)
    index = builder.tool_call_start("c1", "write").content_index
    for start in range(0, len(text) - 7, 1_000):
        builder.tool_call_delta(index, text[start : start + 1_000], parse_partial=True)
    message = builder.done().message
    assert message.tool_calls[0].arguments == json.loads(text)


def test_arguments_nested_too_deep_to_read_are_none() -> None:
    """Before: a bare RecursionError ended the response."""
    builder = MessageBuilder(MODEL)
    index = builder.tool_call_start("c1", "deep").content_index
    builder.tool_call_delta(index, '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert builder.tool_call_end(index).tool_call.arguments == {}
