"""The "google-generative-ai" wire API (Gemini):
``POST {base_url}/models/{id}:streamGenerateContent?alt=sse``.

Each event is a whole ``GenerateContentResponse`` whose first candidate carries
the next parts: text (``thought: true`` marks reasoning), and complete
``functionCall`` parts (Gemini does not stream arguments, so a call arrives in
one piece and is emitted as start/delta/end at once). A candidate's
``finishReason`` marks the end; a body that stops without one is an error.

Thought signatures (opaque base64 from Gemini) are kept on text, thinking and
tool-call blocks and sent back only to the same provider and model.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from typing import Any

from ..events import StreamEvent
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    now_ms,
)
from ..models import Model
from ._builder import MessageBuilder
from ._failure import ProviderFailure, in_stream_error, text_piece
from ._options import StreamOptions, forced_tool
from ._sse import SSEEvent
from ._stream import WireApi, WireRequest, parse_event_json
from ._transform import transform_messages
from ._usage import compute_cost, token_count

__all__ = ["build_request", "stream_google"]

_FILTERED = frozenset(  # finish reasons of Google's safety and content filters
    {
        "SAFETY",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "RECITATION",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_ids = itertools.count(1)
_BUDGETS = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}


def _requires_tool_call_id(model: Model) -> bool:
    return model.id.startswith(("claude-", "gpt-oss-"))


def _gemini_major(model: Model) -> int | None:
    match = re.match(r"^gemini(?:-live)?-(\d+)", model.id.lower())
    return int(match.group(1)) if match else None


def _signature(same: bool, signature: str | None) -> dict[str, str]:
    valid = bool(signature) and len(signature or "") % 4 == 0 and _BASE64.match(signature or "")
    return {"thoughtSignature": signature} if same and valid and signature else {}


def _inline(block: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


def convert_contents(model: Model, context: Context) -> list[dict[str, Any]]:
    """Gemini ``contents`` for ``context`` (tool results grouped into one user turn)."""

    def normalize(tool_call_id: str, source: AssistantMessage) -> str:
        if not _requires_tool_call_id(model):
            return tool_call_id
        return _BAD_ID_CHARS.sub("_", tool_call_id)[:64]

    contents: list[dict[str, Any]] = []
    multimodal_results = (_gemini_major(model) or 3) >= 3
    for message in transform_messages(context.messages, model, normalize):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                parts: list[dict[str, Any]] = [{"text": message.content}]
            else:
                parts = [
                    {"text": b.text} if isinstance(b, TextContent) else _inline(b)
                    for b in message.content
                ]
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):
            same = message.provider == model.provider and message.model == model.id
            parts = []
            for block in message.content:
                if isinstance(block, TextContent):
                    if block.text.strip():
                        parts.append({"text": block.text, **_signature(same, block.text_signature)})
                elif isinstance(block, ThinkingContent):
                    if not block.thinking.strip():
                        continue
                    if same:
                        sig = _signature(same, block.thinking_signature)
                        parts.append({"thought": True, "text": block.thinking, **sig})
                    else:
                        parts.append({"text": block.thinking})
                else:
                    call: dict[str, Any] = {"name": block.name, "args": block.arguments}
                    if _requires_tool_call_id(model):
                        call["id"] = block.id
                    sig = _signature(same, block.thought_signature)
                    parts.append({"functionCall": call, **sig})
            if parts:
                contents.append({"role": "model", "parts": parts})
        else:
            assert isinstance(message, ToolResultMessage)
            text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
            images = (
                [_inline(b) for b in message.content if isinstance(b, ImageContent)]
                if "image" in model.input
                else []
            )
            value = text if text else ("(see attached image)" if images else "")
            response: dict[str, Any] = {
                "name": message.tool_name,
                "response": {"error": value} if message.is_error else {"output": value},
            }
            if images and multimodal_results:
                response["parts"] = images
            if _requires_tool_call_id(model):
                response["id"] = message.tool_call_id
            part = {"functionResponse": response}
            last = contents[-1] if contents else None
            if (
                last
                and last["role"] == "user"
                and any("functionResponse" in p for p in last["parts"])
            ):
                last["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
            if images and not multimodal_results:
                contents.append(
                    {"role": "user", "parts": [{"text": "Tool result image:"}, *images]}
                )
    return contents


def _thinking_config(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    model_id = model.id.lower()
    gemini3 = re.search(r"gemini-3(?:\.\d+)?-(pro|flash)", model_id)
    if not options.reasoning:
        if gemini3:
            return {"thinkingLevel": "LOW" if gemini3.group(1) == "pro" else "MINIMAL"}
        if "2.5-pro" in model_id:
            return None  # 2.5 Pro cannot switch thinking off (a budget of 0 is rejected)
        return {"thinkingBudget": 0}
    level = "high" if options.reasoning == "xhigh" else options.reasoning
    config: dict[str, Any] = {"includeThoughts": True}
    if gemini3:
        if gemini3.group(1) == "pro":
            config["thinkingLevel"] = "LOW" if level in ("minimal", "low") else "HIGH"
        else:
            config["thinkingLevel"] = level.upper()
        return config
    custom = getattr(options.thinking_budgets, level, None) if options.thinking_budgets else None
    budget = custom
    if budget is None:
        budget = -1  # dynamic
        for key, table in _BUDGETS.items():
            if key in model_id:
                budget = table[level]
                break
    config["thinkingBudget"] = budget
    return config


def build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> WireRequest:
    """The HTTP request for one streamed Gemini response."""
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens else None)
    if max_tokens:
        generation["maxOutputTokens"] = max_tokens
    if model.reasoning:
        thinking = _thinking_config(model, options)
        if thinking is not None:
            generation["thinkingConfig"] = thinking
    body: dict[str, Any] = {"contents": convert_contents(model, context)}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parametersJsonSchema": t.parameters,
                    }
                    for t in context.tools
                ]
            }
        ]
        choice = options.tool_choice
        if choice is not None:
            word, name = forced_tool(choice)
            config: dict[str, Any] = {"mode": {"auto": "AUTO", "none": "NONE"}.get(word, "ANY")}
            if name is not None:
                config["allowedFunctionNames"] = [name]
            body["toolConfig"] = {"functionCallingConfig": config}
    if generation:
        body["generationConfig"] = generation
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["x-goog-api-key"] = api_key
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    url = f"{model.base_url.rstrip('/')}/models/{model.id}:streamGenerateContent?alt=sse"
    return WireRequest(url, headers, body)


class GoogleDecoder:
    """Gemini response chunks -> stream events."""

    def __init__(self, model: Model, builder: MessageBuilder) -> None:
        self.model = model
        self.builder = builder
        self.current: int | None = None
        self.finish_reason: str | None = None

    def _close_current(self) -> list[StreamEvent]:
        index, self.current = self.current, None
        if index is None:
            return []
        block = self.builder.message.content[index]
        if isinstance(block, ThinkingContent):
            return [self.builder.thinking_end(index)]
        return [self.builder.text_end(index)]

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]:
        chunk = parse_event_json(event)
        if isinstance(chunk, list) and chunk:  # a chunk (an error, say) wrapped in a list
            chunk = chunk[0]
        if not isinstance(chunk, dict):
            raise ProviderFailure(f"a stream chunk that is not an object: {event.data}")
        if "error" in chunk:
            raise in_stream_error(chunk["error"], ("status", "code"))
        builder = self.builder
        message = builder.message
        if chunk.get("responseId") and not message.response_id:
            message.response_id = chunk["responseId"]
        out: list[StreamEvent] = []
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        for part in (candidate.get("content") or {}).get("parts") or []:
            if "text" in part:
                out += self._text(part)
            if "functionCall" in part:
                out += self._close_current()
                out += self._function_call(part)
        if candidate.get("finishReason"):
            self.finish_reason = candidate["finishReason"]
        usage = chunk.get("usageMetadata")
        if usage:
            cached = token_count(usage, "cachedContentTokenCount")
            message.usage = compute_cost(
                self.model,
                Usage(
                    input=max(0, token_count(usage, "promptTokenCount") - cached),
                    output=token_count(usage, "candidatesTokenCount")
                    + token_count(usage, "thoughtsTokenCount"),
                    cache_read=cached,
                    total_tokens=token_count(usage, "totalTokenCount"),
                ),
            )
        return out

    def _text(self, part: dict[str, Any]) -> list[StreamEvent]:
        builder = self.builder
        thinking = part.get("thought") is True
        want = ThinkingContent if thinking else TextContent
        out: list[StreamEvent] = []
        if self.current is None or not isinstance(builder.message.content[self.current], want):
            out += self._close_current()
            out.append(builder.thinking_start() if thinking else builder.text_start())
            self.current = len(builder.message.content) - 1
        block = builder.message.content[self.current]
        signature = part.get("thoughtSignature")
        if isinstance(block, ThinkingContent):
            if signature:
                block.thinking_signature = signature
            out.append(
                builder.thinking_delta(self.current, text_piece(part["text"], "a thinking delta"))
            )
        else:
            assert isinstance(block, TextContent)
            if signature:
                block.text_signature = signature
            out.append(builder.text_delta(self.current, text_piece(part["text"], "a text delta")))
        return out

    def _function_call(self, part: dict[str, Any]) -> list[StreamEvent]:
        builder = self.builder
        call = part["functionCall"]
        name = call.get("name") or ""
        call_id = call.get("id")
        if not call_id or any(c.id == call_id for c in builder.message.tool_calls):
            call_id = f"{name}_{now_ms()}_{next(_ids)}"
        args = call.get("args") or {}
        start = builder.tool_call_start(call_id, name)
        index = len(builder.message.content) - 1
        block = builder.message.content[index]
        assert isinstance(block, ToolCall)
        if part.get("thoughtSignature"):
            block.thought_signature = part["thoughtSignature"]
        delta = builder.tool_call_delta(index, json.dumps(args))
        return [start, delta, builder.tool_call_end(index, args)]

    def finish(self) -> Iterable[StreamEvent]:
        if self.finish_reason is None:
            raise ProviderFailure(
                "connection closed before the response was complete (no finishReason)",
                kind="connection",
            )
        out = self._close_current()
        reason = self.finish_reason
        if reason == "STOP":
            out.append(self.builder.done())  # "toolUse" when there are tool calls
        elif reason == "MAX_TOKENS":
            out.append(self.builder.done("length"))
        elif reason in _FILTERED:
            raise ProviderFailure(
                f"the response was blocked by Google's content filter (finishReason {reason})",
                code=reason,
            )
        else:
            raise ProviderFailure(f"the model stopped with finishReason {reason}", code=reason)
        return out


stream_google = WireApi(build_request, GoogleDecoder, "google-generative-ai")
"""Stream one google-generative-ai response as pi_trio stream events; never raises for
a provider failure (see :func:`pi_trio.providers.stream_wire`)."""
