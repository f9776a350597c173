"""The "mistral-conversations" wire API: Mistral's chat streaming.

``POST {base_url}/v1/chat/completions`` with ``stream: true``.

pi-ai 0.73.1 speaks it through Mistral's SDK (``chat.stream``); this is the same exchange on
the wire. The request is OpenAI-shaped with Mistral's own fields: ``max_tokens`` only when
asked for, ``prompt_mode: "reasoning"`` for reasoning models (``reasoning_effort`` instead for
the models that take one), ``tool_choice`` as ``"auto" | "none" | "required"`` or a named
function, tool results as ``role: "tool"`` messages whose text starts with ``[tool error]``
for a failed tool, and an ``x-affinity`` header carrying the session id (Mistral reuses its
prefix cache by it). Tool call ids are Mistral's nine letters and digits: ids from other
providers are mapped to such ids (a hash, collisions resolved) when the transcript is sent.

The answer is ``data:`` chunks (``choices[0].delta``: ``content`` as a string or as a list of
``text`` and ``thinking`` chunks, ``tool_calls`` whole or in pieces), then ``data: [DONE]``.
Usage (``prompt_tokens``, ``completion_tokens``) comes on the chunk with ``finish_reason``.

Stop reasons: ``stop`` -> "stop", ``length``/``model_length`` -> "length", ``tool_calls`` ->
"toolUse" (pi-ai's map). Where pi_trio does better: a ``content_filter`` finish (or
``error``) ends with stop_reason "error" and a message naming it (pi-ai reports "stop" for
the first), and a body that ends without any ``finish_reason`` is an error, not a success.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from ..events import StreamEvent
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    Usage,
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

__all__ = ["build_request", "mistral_tool_call_ids", "stream_mistral"]

_ID_LENGTH = 9
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_EFFORT_MODELS = frozenset({"mistral-small-2603", "mistral-small-latest", "mistral-medium-3.5"})
_STOP_REASONS = {"stop": "stop", "length": "length", "model_length": "length"}


def mistral_tool_call_ids() -> Any:
    """A normaliser for :func:`transform_messages`: any tool call id -> nine letters and
    digits, the same id for the same input, two inputs never sharing one (within a request)."""
    given: dict[str, str] = {}
    owners: dict[str, str] = {}

    def normalize(tool_call_id: str, source: AssistantMessage) -> str:
        known = given.get(tool_call_id)
        if known is not None:
            return known
        plain = _NOT_ALNUM.sub("", tool_call_id)
        attempt = 0
        while True:
            if attempt == 0 and len(plain) == _ID_LENGTH:
                candidate = plain
            else:
                seed = (plain or tool_call_id) + (f":{attempt}" if attempt else "")
                candidate = hashlib.sha256(seed.encode()).hexdigest()[:_ID_LENGTH]
            if owners.setdefault(candidate, tool_call_id) == tool_call_id:
                given[tool_call_id] = candidate
                return candidate
            attempt += 1

    return normalize


def _image(block: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": f"data:{block.mime_type};base64,{block.data}"}


def _tool_result_text(message: ToolResultMessage, images: bool) -> str:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent)).strip()
    had_images = any(isinstance(b, ImageContent) for b in message.content)
    prefix = "[tool error] " if message.is_error else ""
    if text:
        note = "\n[tool image omitted: model does not support images]" if had_images else ""
        return prefix + text + ("" if images else note)
    if had_images:
        shown = (
            "(see attached image)" if images else "(image omitted: model does not support images)"
        )
        return prefix + shown
    return prefix + "(no tool output)"


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.thinking.strip():
                thought = [{"type": "text", "text": block.thinking}]
                parts.append({"type": "thinking", "thinking": thought})
        else:
            arguments = json.dumps(block.arguments or {})
            function = {"name": block.name, "arguments": arguments}
            calls.append({"id": block.id, "type": "function", "function": function})
    if not parts and not calls:
        return None
    entry: dict[str, Any] = {"role": "assistant"}
    if parts:
        entry["content"] = parts
    if calls:
        entry["tool_calls"] = calls
    return entry


def convert_messages(model: Model, messages: list[Message]) -> list[dict[str, Any]]:
    """Mistral chat ``messages`` for an already transformed transcript."""
    images = "image" in model.input
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                out.append({"role": "user", "content": message.content})
                continue
            parts = [
                {"type": "text", "text": b.text} if isinstance(b, TextContent) else _image(b)
                for b in message.content
                if isinstance(b, TextContent) or images
            ]
            if parts:
                out.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            entry = _assistant(message)
            if entry is not None:
                out.append(entry)
        else:
            assert isinstance(message, ToolResultMessage)
            content = [{"type": "text", "text": _tool_result_text(message, images)}]
            if images:
                content += [_image(b) for b in message.content if isinstance(b, ImageContent)]
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "name": message.tool_name,
                    "content": content,
                }
            )
    return out


def build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> WireRequest:
    """The HTTP request for one streamed Mistral chat completion."""
    transformed = transform_messages(context.messages, model, mistral_tool_call_ids())
    messages = convert_messages(model, transformed)
    if context.system_prompt:
        messages.insert(0, {"role": "system", "content": context.system_prompt})
    body: dict[str, Any] = {"model": model.id, "stream": True, "messages": messages}
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": False,
                },
            }
            for t in context.tools
        ]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.tool_choice is not None:
        word, name = forced_tool(options.tool_choice)
        body["tool_choice"] = (
            word if name is None else {"type": "function", "function": {"name": name}}
        )
    if model.reasoning and options.reasoning:
        if model.id in _EFFORT_MODELS:
            levels = (model.compat or {}).get("reasoning_effort_map") or {}
            body["reasoning_effort"] = levels.get(options.reasoning, "high")
        else:
            body["prompt_mode"] = "reasoning"
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    if options.session_id and not any(k.lower() == "x-affinity" for k in headers):
        headers["x-affinity"] = options.session_id
    url = f"{model.base_url.rstrip('/')}/v1/chat/completions"
    return WireRequest(url, headers, body)


class MistralDecoder:
    """Mistral chat chunks -> stream events."""

    def __init__(self, model: Model, builder: MessageBuilder) -> None:
        self.model = model
        self.builder = builder
        self.open: int | None = None  # content index of the open text or thinking block
        self.calls: dict[str, int] = {}  # tool call id -> content index
        self.by_index: dict[int, int] = {}  # the call's position in the chunk -> content index
        self.finish_reason: str | None = None
        self.ended = False
        """``[DONE]`` came: nothing after it is read."""

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]:
        if event.data.strip() == "[DONE]":
            self.ended = True
            return []
        chunk = parse_event_json(event)
        if "error" in chunk and not chunk.get("choices"):
            raise in_stream_error(chunk["error"] or chunk)
        if chunk.get("object") == "error":  # Mistral's own error shape
            raise in_stream_error(chunk)
        message = self.builder.message
        message.response_id = message.response_id or chunk.get("id")
        if chunk.get("usage"):
            self._usage(chunk["usage"])
        choices = chunk.get("choices") or []
        if not choices:
            return []
        choice = choices[0]
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}
        out: list[StreamEvent] = []
        content = delta.get("content")
        for item in content if isinstance(content, list) else [content] if content else []:
            out += self._content(item)
        for call in delta.get("tool_calls") or []:
            out += self._tool_call(call)
        return out

    def _content(self, item: Any) -> list[StreamEvent]:
        if not isinstance(item, dict):
            return self._append(TextContent, text_piece(item, "a text delta"))
        if item.get("type") == "text":
            return self._append(TextContent, item.get("text") or "")
        if item.get("type") == "thinking":
            parts = item.get("thinking") or []
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            return self._append(ThinkingContent, text)
        return []

    def _append(self, kind: type, text: str) -> list[StreamEvent]:
        if not text:
            return []
        builder = self.builder
        out: list[StreamEvent] = []
        if self.open is None or not isinstance(builder.message.content[self.open], kind):
            out += self._close()
            out.append(builder.text_start() if kind is TextContent else builder.thinking_start())
            self.open = len(builder.message.content) - 1
        if kind is TextContent:
            out.append(builder.text_delta(self.open, text_piece(text, "a text delta")))
        else:
            out.append(builder.thinking_delta(self.open, text_piece(text, "a thinking delta")))
        return out

    def _close(self) -> list[StreamEvent]:
        index, self.open = self.open, None
        if index is None:
            return []
        if isinstance(self.builder.message.content[index], TextContent):
            return [self.builder.text_end(index)]
        return [self.builder.thinking_end(index)]

    def _tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        out = self._close()
        function = call.get("function") or {}
        call_id = call.get("id")
        position = call.get("index")
        if call_id and call_id != "null":
            index = self.calls.get(call_id)
        elif position is not None:
            index = self.by_index.get(position)
        else:  # a continuation without id or index: the latest call
            index = max(self.calls.values(), default=None)
        if index is None:
            if not call_id or call_id == "null":
                seed = f"toolcall:{position or 0}".encode()
                call_id = hashlib.sha256(seed).hexdigest()[:_ID_LENGTH]
            out.append(self.builder.tool_call_start(call_id, function.get("name") or ""))
            index = len(self.builder.message.content) - 1
            self.calls[call_id] = index
            if position is not None:
                self.by_index[position] = index
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        if arguments:
            out.append(self.builder.tool_call_delta(index, arguments, parse_partial=True))
        return out

    def _usage(self, raw: dict[str, Any]) -> None:
        prompt = token_count(raw, "prompt_tokens")
        completion = token_count(raw, "completion_tokens")
        usage = Usage(
            input=prompt,
            output=completion,
            cache_read=0,
            cache_write=0,
            total_tokens=token_count(raw, "total_tokens") or prompt + completion,
        )
        self.builder.message.usage = compute_cost(self.model, usage)

    def finish(self) -> Iterable[StreamEvent]:
        reason = self.finish_reason
        out = self._close()
        out += [self.builder.tool_call_end(index) for index in sorted(self.calls.values())]
        self.calls.clear()
        if reason is None:
            raise ProviderFailure(
                "connection closed before the response was complete (no finish_reason)"
            )
        if reason == "content_filter":
            raise ProviderFailure(
                "response stopped by Mistral's content filter (finish_reason: content_filter)",
                kind="bad_request",
                code="content_filter",
            )
        if reason == "error":
            raise ProviderFailure("the model stopped with an error (finish_reason: error)")
        if reason == "tool_calls":
            return [*out, self.builder.done("toolUse")]
        return [*out, self.builder.done(_STOP_REASONS.get(reason, "stop"))]  # type: ignore[arg-type]


stream_mistral = WireApi(build_request, MistralDecoder, "mistral-conversations")
"""Stream one mistral-conversations response as pi_trio stream events; never raises for a
provider failure (see :func:`pi_trio.providers.stream_wire`)."""
