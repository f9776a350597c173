"""Recorded-style SSE bodies for each wire API: text, thinking, parallel tool calls.

Shapes follow what each service sends (field names, event names, the order of
events); content is made up. ``Spec`` ties a body set to a model and the path
the request must go to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

import pi_trio as pt

from ._server import sse_events


@attrs.frozen
class Spec:
    api: str
    path: str
    base_suffix: str
    text: list[str]
    thinking: list[str]
    tools: list[str]
    first_text_chunks: int  # how many chunks of `text` reach the first text delta
    malformed_event: str  # event name used for a malformed event
    usage: tuple[int, int, int]  # input, output, cache_read of `text`
    tool_result_in_body: Callable[[dict[str, Any]], bool]

    def model(self, base_url: str, **changes: Any) -> pt.Model:
        provider = {
            "openai-completions": "openai",
            "openai-responses": "openai",
            "anthropic-messages": "anthropic",
            "google-generative-ai": "google",
            "azure-openai-responses": "azure-openai-responses",
            "mistral-conversations": "mistral",
        }[self.api]
        return pt.Model(
            id="test-model",
            name="Test model",
            api=self.api,
            provider=provider,
            base_url=base_url + self.base_suffix,
            reasoning=True,
            input=("text", "image"),
            cost=pt.ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=4.0),
            max_tokens=4096,
            **changes,
        )


def _chat(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}}
    if finish:
        choice["finish_reason"] = finish
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "test-model",
        "choices": [choice],
        **extra,
    }


_CHAT_USAGE = {
    "choices": [],
    "id": "chatcmpl-1",
    "usage": {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 2},
    },
}

COMPLETIONS = Spec(
    api="openai-completions",
    path="/v1/chat/completions",
    base_suffix="/v1",
    text=sse_events(
        _chat({"role": "assistant", "content": ""}),
        _chat({"content": "Hello"}),
        _chat({"content": " world"}),
        _chat(finish="stop"),
        _CHAT_USAGE,
        done="[DONE]",
    ),
    thinking=sse_events(
        _chat({"role": "assistant", "reasoning_content": "Let me "}),
        _chat({"reasoning_content": "think."}),
        _chat({"content": "Answer."}),
        _chat(finish="stop"),
        _CHAT_USAGE,
        done="[DONE]",
    ),
    tools=sse_events(
        _chat(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ],
            }
        ),
        _chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]}),
        _chat(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz": "UTC"}'},
                    }
                ]
            }
        ),
        _chat({"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]}),
        _chat(finish="tool_calls"),
        _CHAT_USAGE,
        done="[DONE]",
    ),
    first_text_chunks=2,
    malformed_event="message",
    usage=(8, 5, 2),
    tool_result_in_body=lambda body: any(
        m.get("role") == "tool" and m.get("tool_call_id") == "call_a" for m in body["messages"]
    ),
)

_A_START = (
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "test-model",
            "content": [],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 1,
                "cache_read_input_tokens": 2,
                "cache_creation_input_tokens": 0,
            },
        },
    },
)


def _a_block(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _a_delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _a_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def _a_end(reason: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


ANTHROPIC = Spec(
    api="anthropic-messages",
    path="/v1/messages",
    base_suffix="",
    text=sse_events(
        _A_START,
        _a_block(0, {"type": "text", "text": ""}),
        ("ping", {"type": "ping"}),
        _a_delta(0, {"type": "text_delta", "text": "Hello"}),
        _a_delta(0, {"type": "text_delta", "text": " world"}),
        _a_stop(0),
        *_a_end("end_turn"),
    ),
    thinking=sse_events(
        _A_START,
        _a_block(0, {"type": "thinking", "thinking": ""}),
        _a_delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
        _a_delta(0, {"type": "thinking_delta", "thinking": "think."}),
        _a_delta(0, {"type": "signature_delta", "signature": "sig-abc"}),
        _a_stop(0),
        _a_block(1, {"type": "text", "text": ""}),
        _a_delta(1, {"type": "text_delta", "text": "Answer."}),
        _a_stop(1),
        *_a_end("end_turn"),
    ),
    tools=sse_events(
        _A_START,
        _a_block(0, {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}),
        _a_delta(0, {"type": "input_json_delta", "partial_json": '{"city": "Pa'}),
        _a_delta(0, {"type": "input_json_delta", "partial_json": 'ris"}'}),
        _a_stop(0),
        _a_block(1, {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}}),
        _a_delta(1, {"type": "input_json_delta", "partial_json": '{"tz": "UTC"}'}),
        _a_stop(1),
        *_a_end("tool_use"),
    ),
    first_text_chunks=4,
    malformed_event="content_block_delta",
    usage=(10, 5, 2),
    tool_result_in_body=lambda body: any(
        isinstance(m["content"], list)
        and any(
            b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_a"
            for b in m["content"]
        )
        for m in body["messages"]
    ),
)


def _r(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (kind, {"type": kind, **fields})


_R_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 2},
}


def _r_message(text_parts: list[str], item_id: str = "msg_1") -> list[tuple[str, dict[str, Any]]]:
    return [
        _r("response.output_item.added", item={"type": "message", "id": item_id, "content": []}),
        _r("response.content_part.added", part={"type": "output_text", "text": ""}),
        *[_r("response.output_text.delta", delta=t) for t in text_parts],
        _r(
            "response.output_item.done",
            item={
                "type": "message",
                "id": item_id,
                "status": "completed",
                "content": [{"type": "output_text", "text": "".join(text_parts)}],
            },
        ),
    ]


def _r_done(status: str = "completed") -> tuple[str, dict[str, Any]]:
    kind = "response.completed" if status == "completed" else "response.incomplete"
    return _r(kind, response={"id": "resp_1", "status": status, "usage": _R_USAGE})


def _r_call(
    item_id: str, call_id: str, name: str, pieces: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    return [
        _r(
            "response.output_item.added",
            item={
                "type": "function_call",
                "id": item_id,
                "call_id": call_id,
                "name": name,
                "arguments": "",
            },
        ),
        *[_r("response.function_call_arguments.delta", delta=p) for p in pieces],
        _r("response.function_call_arguments.done", arguments="".join(pieces)),
        _r(
            "response.output_item.done",
            item={
                "type": "function_call",
                "id": item_id,
                "call_id": call_id,
                "name": name,
                "arguments": "".join(pieces),
            },
        ),
    ]


RESPONSES = Spec(
    api="openai-responses",
    path="/v1/responses",
    base_suffix="/v1",
    text=sse_events(
        _r("response.created", response={"id": "resp_1", "status": "in_progress"}),
        *_r_message(["Hello", " world"]),
        _r_done(),
    ),
    thinking=sse_events(
        _r("response.created", response={"id": "resp_1"}),
        _r("response.output_item.added", item={"type": "reasoning", "id": "rs_1", "summary": []}),
        _r("response.reasoning_summary_part.added", part={"type": "summary_text", "text": ""}),
        _r("response.reasoning_summary_text.delta", delta="Let me "),
        _r("response.reasoning_summary_text.delta", delta="think."),
        _r("response.reasoning_summary_part.done", part={"type": "summary_text", "text": "x"}),
        _r(
            "response.output_item.done",
            item={
                "type": "reasoning",
                "id": "rs_1",
                "encrypted_content": "ENC",
                "summary": [{"type": "summary_text", "text": "Let me think."}],
            },
        ),
        *_r_message(["Answer."]),
        _r_done(),
    ),
    tools=sse_events(
        _r("response.created", response={"id": "resp_1"}),
        *_r_call("fc_1", "call_a", "get_weather", ['{"city": "Pa', 'ris"}']),
        *_r_call("fc_2", "call_b", "get_time", ['{"tz": "UTC"}']),
        _r_done(),
    ),
    first_text_chunks=4,
    malformed_event="response.output_text.delta",
    usage=(8, 5, 2),
    tool_result_in_body=lambda body: any(
        i.get("type") == "function_call_output" and i.get("call_id") == "call_a"
        for i in body["input"]
    ),
)


def _g(
    parts: list[dict[str, Any]], finish: str | None = None, usage: bool = False
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {
        "candidates": [candidate],
        "responseId": "resp-g1",
        "modelVersion": "test-model",
    }
    if usage:
        chunk["usageMetadata"] = {
            "promptTokenCount": 10,
            "candidatesTokenCount": 4,
            "thoughtsTokenCount": 1,
            "totalTokenCount": 15,
            "cachedContentTokenCount": 2,
        }
    return chunk


GOOGLE = Spec(
    api="google-generative-ai",
    path="/v1beta/models/test-model:streamGenerateContent?alt=sse",
    base_suffix="/v1beta",
    text=sse_events(_g([{"text": "Hello"}]), _g([{"text": " world"}], "STOP", usage=True)),
    thinking=sse_events(
        _g([{"text": "Let me ", "thought": True}]),
        _g([{"text": "think.", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"}]),
        _g([{"text": "Answer."}], "STOP", usage=True),
    ),
    tools=sse_events(
        _g(
            [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_time", "args": {"tz": "UTC"}}},
            ],
            "STOP",
            usage=True,
        ),
    ),
    first_text_chunks=1,
    malformed_event="message",
    usage=(8, 5, 2),
    tool_result_in_body=lambda body: any(
        "functionResponse" in p and p["functionResponse"]["name"] == "get_weather"
        for c in body["contents"]
        for p in c["parts"]
    ),
)

SPECS = [COMPLETIONS, RESPONSES, ANTHROPIC, GOOGLE]
