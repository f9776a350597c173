"""The "anthropic-messages" wire API: ``POST {base_url}/v1/messages`` with ``stream: true``.

The answer is a sequence of named events: ``message_start``, then per content
block ``content_block_start`` / ``content_block_delta``* / ``content_block_stop``
(text, thinking with a signature, redacted thinking, tool_use with streamed
``input_json_delta``), ``message_delta`` (stop reason, final usage) and
``message_stop``. A stream that ends before ``message_stop`` is an error, and so
is an ``error`` event (e.g. ``overloaded_error`` after the headers were sent).

Thinking: a reasoning level asks for adaptive thinking on the models that have
it (Opus/Sonnet 4.6+) and for a token budget elsewhere, growing ``max_tokens`` by
the budget like pi-ai. Prompt caching marks the system prompt, the last tool
and the last user block as ephemeral unless ``cache_retention`` is "none".

``tool_choice``: "required" is Anthropic's ``any``, a name its ``tool``; with thinking on,
Anthropic refuses both (only ``auto`` and ``none`` go with thinking), so they are sent as
``auto`` then, and a model that answers in text is told to call the tool by whoever needed it
(structured output does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from ..events import StreamEvent
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..models import Model
from ._builder import MessageBuilder
from ._failure import ProviderFailure, in_stream_error, text_piece
from ._options import StreamOptions, forced_tool
from ._sse import SSEEvent
from ._stream import WireApi, WireRequest, parse_event_json
from ._transform import transform_messages
from ._usage import compute_cost, token_count

__all__ = ["build_request", "stream_anthropic"]

API_VERSION = "2023-06-01"
_INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
_DEFAULT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_STOP_REASONS: dict[str, Literal["stop", "length", "toolUse", "error"]] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "sensitive": "error",
}
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def _adaptive(model: Model) -> bool:
    return any(
        tag in model.id
        for tag in ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6")
    )


def _normalize_id(tool_call_id: str, source: AssistantMessage) -> str:
    return _BAD_ID_CHARS.sub("_", tool_call_id)[:64]


def _image(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def _tool_result_content(content: Sequence[TextContent | ImageContent]) -> Any:
    if not any(isinstance(b, ImageContent) for b in content):
        return "\n".join(b.text for b in content if isinstance(b, TextContent))
    blocks = [
        {"type": "text", "text": b.text} if isinstance(b, TextContent) else _image(b)
        for b in content
    ]
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def convert_messages(
    model: Model, context: Context, cache: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Messages API ``messages`` for ``context`` (tool results grouped into one user turn)."""
    out: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model, _normalize_id):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    out.append({"role": "user", "content": message.content})
                continue
            blocks = [
                {"type": "text", "text": b.text} if isinstance(b, TextContent) else _image(b)
                for b in message.content
                if not (isinstance(b, TextContent) and not b.text.strip())
            ]
            if blocks:
                out.append({"role": "user", "content": blocks})
        elif isinstance(message, AssistantMessage):
            blocks = []
            for block in message.content:
                if isinstance(block, TextContent):
                    if block.text.strip():
                        blocks.append({"type": "text", "text": block.text})
                elif isinstance(block, ThinkingContent):
                    if block.redacted:
                        blocks.append(
                            {"type": "redacted_thinking", "data": block.thinking_signature}
                        )
                    elif not block.thinking.strip():
                        continue
                    elif not (block.thinking_signature or "").strip():
                        blocks.append({"type": "text", "text": block.thinking})
                    else:
                        blocks.append(
                            {
                                "type": "thinking",
                                "thinking": block.thinking,
                                "signature": block.thinking_signature,
                            }
                        )
                else:
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": block.id,
                            "name": block.name,
                            "input": block.arguments,
                        }
                    )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        else:
            assert isinstance(message, ToolResultMessage)
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _tool_result_content(message.content),
                "is_error": message.is_error,
            }
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and isinstance(previous["content"], list)
                and previous["content"]
                and previous["content"][-1].get("type") == "tool_result"
            ):
                previous["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
    if cache and out and out[-1]["role"] == "user":
        last = out[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache}]
        elif last["content"][-1].get("type") in ("text", "image", "tool_result"):
            last["content"][-1]["cache_control"] = cache
    return out


def build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> WireRequest:
    """The HTTP request for one streamed Messages API response."""
    retention = options.cache_retention or "short"
    cache: dict[str, Any] | None = None
    if retention != "none":
        cache = {"type": "ephemeral", **({"ttl": "1h"} if retention == "long" else {})}
    max_tokens = options.max_tokens or min(model.max_tokens, 32_000)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, cache),
        "max_tokens": max_tokens,
        "stream": True,
    }
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if cache:
            system["cache_control"] = cache
        body["system"] = [system]
    thinking = bool(options.reasoning) and model.reasoning
    if options.temperature is not None and not thinking:
        body["temperature"] = options.temperature
    if context.tools:
        tools = []
        for index, tool in enumerate(context.tools):
            schema = tool.parameters
            entry: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "eager_input_streaming": True,
                "input_schema": {
                    "type": "object",
                    "properties": schema.get("properties", {}),
                    "required": schema.get("required", []),
                },
            }
            if cache and index == len(context.tools) - 1:
                entry["cache_control"] = cache
            tools.append(entry)
        body["tools"] = tools
        choice = options.tool_choice
        if choice is not None:
            word, name = forced_tool(choice)
            kinds = {"auto": "auto", "none": "none", "required": "any"}
            named = {"type": "tool", "name": name}
            body["tool_choice"] = {"type": kinds[word]} if name is None else named
            if thinking and word != "none":  # forced tool use is refused with thinking
                body["tool_choice"] = {"type": "auto"}
    if model.reasoning:
        if thinking and _adaptive(model):
            level = options.reasoning
            effort = {"minimal": "low", "low": "low", "medium": "medium"}.get(level or "", "high")
            body["thinking"] = {"type": "adaptive", "display": "summarized"}
            body["output_config"] = {"effort": effort}
        elif thinking:
            level = "high" if options.reasoning == "xhigh" else (options.reasoning or "medium")
            budgets = dict(_DEFAULT_BUDGETS)
            if options.thinking_budgets is not None:
                custom = getattr(options.thinking_budgets, level, None)
                if custom is not None:
                    budgets[level] = custom
            budget = budgets[level]
            total = min(max_tokens + budget, model.max_tokens)
            if total <= budget:
                budget = max(0, total - 1024)
            body["max_tokens"] = total
            body["thinking"] = {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
        else:
            body["thinking"] = {"type": "disabled"}
    if options.metadata and isinstance(options.metadata.get("user_id"), str):
        body["metadata"] = {"user_id": options.metadata["user_id"]}
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "anthropic-version": API_VERSION,
    }
    if "sk-ant-oat" in api_key:
        headers["authorization"] = f"Bearer {api_key}"
        betas = ["oauth-2025-04-20"]
    else:
        headers["x-api-key"] = api_key
        betas = []
    if thinking and not _adaptive(model):
        betas.append(_INTERLEAVED_THINKING_BETA)
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    base = model.base_url.rstrip("/")
    url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
    return WireRequest(url, headers, body)


class AnthropicDecoder:
    """Messages API events -> stream events."""

    def __init__(self, model: Model, builder: MessageBuilder) -> None:
        self.model = model
        self.builder = builder
        self.blocks: dict[int, int] = {}  # anthropic block index -> content index
        self.stop_reason: str | None = None
        self.started = False
        self.stopped = False

    @property
    def ended(self) -> bool:
        """``message_stop`` came: nothing after it is read."""
        return self.stopped

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]:
        if event.event == "ping":
            return []
        data = parse_event_json(event)
        kind = data.get("type", event.event)
        if kind == "error" or event.event == "error":
            raise in_stream_error(data.get("error", data), ("type",))
        builder = self.builder
        if kind == "message_start":
            self.started = True
            message = data["message"]
            builder.message.response_id = message.get("id")
            self._usage(message.get("usage") or {})
            return []
        if kind == "content_block_start":
            return self._block_start(data["index"], data["content_block"])
        if kind == "content_block_delta":
            return self._block_delta(data["index"], data["delta"])
        if kind == "content_block_stop":
            return self._block_stop(data["index"])
        if kind == "message_delta":
            reason = (data.get("delta") or {}).get("stop_reason")
            if reason:
                self.stop_reason = reason
            self._usage(data.get("usage") or {})
            return []
        if kind == "message_stop":
            self.stopped = True
        return []

    def _block_start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        builder = self.builder
        kind = block.get("type")
        if kind == "text":
            event: StreamEvent = builder.text_start()
        elif kind == "thinking":
            event = builder.thinking_start()
        elif kind == "redacted_thinking":
            event = builder.thinking_start()
            content = builder.message.content[-1]
            assert isinstance(content, ThinkingContent)
            content.thinking = "[Reasoning redacted]"
            content.thinking_signature = block.get("data")
            content.redacted = True
        elif kind == "tool_use":
            event = builder.tool_call_start(block["id"], block["name"])
        else:
            return []
        self.blocks[index] = len(builder.message.content) - 1
        return [event]

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        position = self.blocks.get(index)
        if position is None:
            return []
        kind = delta.get("type")
        builder = self.builder
        if kind == "text_delta":
            return [builder.text_delta(position, text_piece(delta["text"], "a text delta"))]
        if kind == "thinking_delta":
            return [
                builder.thinking_delta(position, text_piece(delta["thinking"], "a thinking delta"))
            ]
        if kind == "input_json_delta":
            piece = delta["partial_json"]
            return [builder.tool_call_delta(position, piece, parse_partial=True)]
        if kind == "signature_delta":
            block = builder.message.content[position]
            assert isinstance(block, ThinkingContent)
            block.thinking_signature = (block.thinking_signature or "") + delta["signature"]
        return []

    def _block_stop(self, index: int) -> list[StreamEvent]:
        position = self.blocks.pop(index, None)
        if position is None:
            return []
        block = self.builder.message.content[position]
        if isinstance(block, TextContent):
            return [self.builder.text_end(position)]
        if isinstance(block, ThinkingContent):
            return [self.builder.thinking_end(position)]
        assert isinstance(block, ToolCall)
        return [self.builder.tool_call_end(position)]

    def _usage(self, raw: dict[str, Any]) -> None:
        usage = self.builder.message.usage
        for field, key in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_write", "cache_creation_input_tokens"),
        ):
            if raw.get(key) is not None:
                setattr(usage, field, token_count(raw, key))
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        compute_cost(self.model, usage)

    def finish(self) -> Iterable[StreamEvent]:
        if not self.stopped:
            raise ProviderFailure(
                "connection closed before the response was complete (no message_stop)",
                kind="connection",
            )
        reason = self.stop_reason or "end_turn"
        mapped = _STOP_REASONS.get(reason)
        if mapped is None:
            raise ProviderFailure(
                f"unknown stop_reason from the provider: {reason}", kind="protocol"
            )
        if mapped == "error":
            raise ProviderFailure(f"the model stopped with stop_reason {reason!r}")
        return [self.builder.done(mapped)]


stream_anthropic = WireApi(build_request, AnthropicDecoder, "anthropic-messages")
"""Stream one anthropic-messages response as pi_trio stream events; never raises for
a provider failure (see :func:`pi_trio.providers.stream_wire`)."""
