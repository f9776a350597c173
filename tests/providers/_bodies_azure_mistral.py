"""Bodies for "azure-openai-responses" and "mistral-conversations" in the shape of the other
wire APIs' specs (``_bodies.Spec``): text, thinking, parallel tool calls.

Azure sends the Responses API's events (its own fields, such as ``content_filters``, beside
them), so its spec is the Responses spec at Azure's path. Mistral's chunks follow what the
service sent in the recorded bodies under ``tests/data/recorded`` (see its SOURCE.md): an
empty first delta with the role, content as a string or as ``thinking``/``text`` chunks,
usage on the chunk carrying ``finish_reason``, ``[DONE]`` last.
"""

from __future__ import annotations

from typing import Any

import attrs

from ._bodies import RESPONSES, Spec
from ._server import sse_events

AZURE = attrs.evolve(
    RESPONSES,
    api="azure-openai-responses",
    path="/openai/v1/responses?api-version=v1",
    base_suffix="/openai/v1",
)


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: bool = False) -> Any:
    chunk: dict[str, Any] = {
        "id": "5319bd0299614c679a0068a4f2c8ffd0",
        "object": "chat.completion.chunk",
        "created": 1769088720,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if usage:
        chunk["usage"] = {"prompt_tokens": 10, "total_tokens": 15, "completion_tokens": 5}
    return chunk


def _thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


def _call(index: int, arguments: str, id: str | None = None, name: str | None = None) -> Any:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id:
        call["id"] = id
        call["type"] = "function"
        call["function"]["name"] = name
    return call


MISTRAL = Spec(
    api="mistral-conversations",
    path="/v1/chat/completions",
    base_suffix="",
    text=sse_events(
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "Hello"}),
        _chunk({"content": " world"}),
        _chunk({"content": ""}, "stop", usage=True),
        done="[DONE]",
    ),
    thinking=sse_events(
        _chunk({"role": "assistant", "content": [_thinking("Let me ")]}),
        _chunk({"content": [_thinking("think.")]}),
        _chunk({"content": [{"type": "text", "text": "Answer."}]}),
        _chunk({"content": ""}, "stop", usage=True),
        done="[DONE]",
    ),
    tools=sse_events(
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"tool_calls": [_call(0, '{"city": "Pa', "gSIMJiOkT", "get_weather")]}),
        _chunk({"tool_calls": [_call(0, 'ris"}')]}),
        _chunk({"tool_calls": [_call(1, '{"tz": "UTC"}', "k2LmQ9xZa", "get_time")]}),
        _chunk({"content": ""}, "tool_calls", usage=True),
        done="[DONE]",
    ),
    first_text_chunks=2,
    malformed_event="message",
    usage=(10, 5, 0),
    tool_result_in_body=lambda body: any(
        m.get("role") == "tool" and m.get("tool_call_id") == "gSIMJiOkT" for m in body["messages"]
    ),
)

SPECS = [AZURE, MISTRAL]
