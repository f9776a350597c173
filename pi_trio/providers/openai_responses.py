"""The "openai-responses" wire API: ``POST {base_url}/responses`` with ``stream: true``.

The stream is typed events: output items (``reasoning``, ``message``,
``function_call``) are added, filled by deltas (reasoning summary text, output
text, refusals, function-call arguments) and closed by
``response.output_item.done``; the response ends with ``response.completed``,
``response.incomplete`` or ``response.failed``.

Replay: a reasoning item is kept whole (JSON) in the thinking block's
signature and sent back as is, so encrypted reasoning survives across turns
(``store: false``, ``include: ["reasoning.encrypted_content"]``); a text block's
signature records its message item id; a tool call id is ``call_id|item_id``.

Where pi-ai is wrong: ``response.incomplete`` (the output token limit was hit)
ends with stop_reason "length"; pi-ai ignores the event and reports "stop". An
incomplete response whose reason is ``content_filter`` (Azure's and OpenAI's
moderation) ends with stop_reason "error" and a message naming the filter: the
answer was cut, not finished, and not merely long.

The body and the decoder are shared with "azure-openai-responses"
(:mod:`.azure_openai_responses`), the same wire format behind another URL and key
header: :func:`responses_body` takes the model name to send and the providers whose
tool call ids carry a Responses item id.
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
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..models import Model
from ._builder import MessageBuilder
from ._failure import ProviderFailure, kind_of_code, text_piece
from ._options import StreamOptions, forced_tool
from ._partial_json import parse_partial_json
from ._sse import SSEEvent
from ._stream import WireApi, WireRequest, parse_event_json
from ._transform import transform_messages
from ._usage import compute_cost, token_count

__all__ = [
    "TOOL_CALL_ID_PROVIDERS",
    "ResponsesDecoder",
    "build_request",
    "responses_body",
    "stream_openai_responses",
]

TOOL_CALL_ID_PROVIDERS = frozenset({"openai", "openai-codex", "opencode"})
"""Providers whose tool call ids are ``call_id|item_id`` (the item id is replayed)."""
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _id_part(part: str) -> str:
    return _BAD_ID_CHARS.sub("_", part)[:64].rstrip("_")


def _normalizer(model: Model, id_providers: frozenset[str]) -> Any:
    def normalize(tool_call_id: str, source: AssistantMessage) -> str:
        if model.provider not in id_providers or "|" not in tool_call_id:
            return _id_part(tool_call_id)
        call_id, item_id = tool_call_id.split("|", 1)
        foreign = source.provider != model.provider or source.api != model.api
        item = f"fc_{_short_hash(item_id)}" if foreign else _id_part(item_id)
        if not item.startswith("fc_"):
            item = _id_part(f"fc_{item}")
        return f"{_id_part(call_id)}|{item}"

    return normalize


def _text_signature(item_id: str, phase: str | None) -> str:
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return json.dumps(payload, separators=(",", ":"))


def _parse_text_signature(signature: str | None) -> tuple[str | None, str | None]:
    if not signature:
        return None, None
    if signature.startswith("{"):
        try:
            data = json.loads(signature)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("id"), str):
            phase = data.get("phase")
            return data["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


def _image(block: ImageContent) -> dict[str, Any]:
    url = f"data:{block.mime_type};base64,{block.data}"
    return {"type": "input_image", "detail": "auto", "image_url": url}


def convert_input(
    model: Model, context: Context, id_providers: frozenset[str] = TOOL_CALL_ID_PROVIDERS
) -> list[dict[str, Any]]:
    """Responses API ``input`` items for ``context``."""
    items: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning else "system"
        items.append({"role": role, "content": context.system_prompt})
    for index, message in enumerate(
        transform_messages(context.messages, model, _normalizer(model, id_providers))
    ):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                parts = [{"type": "input_text", "text": message.content}]
            else:
                parts = [
                    {"type": "input_text", "text": b.text}
                    if isinstance(b, TextContent)
                    else _image(b)
                    for b in message.content
                ]
            if parts:
                items.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            other_model = (
                message.model != model.id
                and message.provider == model.provider
                and message.api == model.api
            )
            for block in message.content:
                if isinstance(block, ThinkingContent):
                    if block.thinking_signature:
                        try:
                            items.append(json.loads(block.thinking_signature))
                        except ValueError:
                            continue
                elif isinstance(block, TextContent):
                    msg_id, phase = _parse_text_signature(block.text_signature)
                    if not msg_id:
                        msg_id = f"msg_{index}"
                    elif len(msg_id) > 64:
                        msg_id = f"msg_{_short_hash(msg_id)}"
                    entry: dict[str, Any] = {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                        "status": "completed",
                        "id": msg_id,
                    }
                    if phase:
                        entry["phase"] = phase
                    items.append(entry)
                else:
                    call_id, _, item_id = block.id.partition("|")
                    call: dict[str, Any] = {
                        "type": "function_call",
                        "call_id": call_id,
                        "name": block.name,
                        "arguments": json.dumps(block.arguments),
                    }
                    if item_id and not (other_model and item_id.startswith("fc_")):
                        call["id"] = item_id
                    items.append(call)
        else:
            assert isinstance(message, ToolResultMessage)
            text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
            images = [b for b in message.content if isinstance(b, ImageContent)]
            output: Any
            if images and "image" in model.input:
                output = ([{"type": "input_text", "text": text}] if text else []) + [
                    _image(b) for b in images
                ]
            else:
                output = text if text else "(see attached image)"
            call_id = message.tool_call_id.split("|", 1)[0]
            items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    return items


def responses_body(
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    model_name: str,
    id_providers: frozenset[str] = TOOL_CALL_ID_PROVIDERS,
) -> dict[str, Any]:
    """The JSON body of one streamed Responses API request.

    Args:
        model_name: the ``model`` field (OpenAI's model id, Azure's deployment name).
        id_providers: providers whose ``call_id|item_id`` tool call ids are replayed whole.
    """
    body: dict[str, Any] = {
        "model": model_name,
        "input": convert_input(model, context, id_providers),
        "stream": True,
        "store": False,
    }
    if options.session_id and options.cache_retention != "none":
        body["prompt_cache_key"] = options.session_id
    if options.cache_retention == "long":
        body["prompt_cache_retention"] = "24h"
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens else None)
    if max_tokens:
        body["max_output_tokens"] = max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in context.tools
        ]
        choice = options.tool_choice
        if choice is not None:
            word, name = forced_tool(choice)
            body["tool_choice"] = word if name is None else {"type": "function", "name": name}
    if model.reasoning and options.reasoning:
        effort = "high" if options.reasoning == "xhigh" else options.reasoning
        body["reasoning"] = {"effort": effort, "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    elif model.reasoning and model.compat and model.compat.get("reasoning_off_effort"):
        body["reasoning"] = {"effort": model.compat["reasoning_off_effort"]}
    return body


def build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> WireRequest:
    """The HTTP request for one streamed Responses API response."""
    body = responses_body(model, context, options, model_name=model.id)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    if options.session_id and options.cache_retention != "none":
        headers["session_id"] = options.session_id
        headers["x-client-request-id"] = options.session_id
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    return WireRequest(f"{model.base_url.rstrip('/')}/responses", headers, body)


class ResponsesDecoder:
    """Responses API events -> stream events."""

    def __init__(self, model: Model, builder: MessageBuilder) -> None:
        self.model = model
        self.builder = builder
        self.current: int | None = None  # content index of the open block
        self.item: dict[str, Any] | None = None
        self.args_text = ""
        self.summary_parts = 0
        self.status: str | None = None
        self.incomplete_reason: str | None = None

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]:
        data = parse_event_json(event)
        kind = data.get("type", event.event)
        builder = self.builder
        message = builder.message
        if kind == "response.created":
            message.response_id = (data.get("response") or {}).get("id")
        elif kind == "response.output_item.added":
            return self._item_added(data["item"])
        elif kind == "response.reasoning_summary_part.added":
            self.summary_parts += 1
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if self._open(ThinkingContent):
                assert self.current is not None
                return [
                    builder.thinking_delta(
                        self.current, text_piece(data["delta"], "a thinking delta")
                    )
                ]
        elif kind == "response.reasoning_summary_part.done":
            if self._open(ThinkingContent):
                assert self.current is not None
                return [builder.thinking_delta(self.current, "\n\n")]
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            if self._open(TextContent):
                assert self.current is not None
                return [builder.text_delta(self.current, text_piece(data["delta"], "a text delta"))]
        elif kind == "response.function_call_arguments.delta":
            if self._open(ToolCall):
                assert self.current is not None
                self.args_text += data["delta"]
                return [builder.tool_call_delta(self.current, data["delta"], parse_partial=True)]
        elif kind == "response.function_call_arguments.done":
            if self._open(ToolCall):
                assert self.current is not None
                final = data.get("arguments", "")
                if final.startswith(self.args_text) and len(final) > len(self.args_text):
                    rest = final[len(self.args_text) :]
                    self.args_text = final
                    return [builder.tool_call_delta(self.current, rest, parse_partial=True)]
                self.args_text = final
        elif kind == "response.output_item.done":
            return self._item_done(data["item"])
        elif kind in ("response.completed", "response.incomplete"):
            response = data.get("response") or {}
            if response.get("id"):
                message.response_id = response["id"]
            self._usage(response.get("usage"))
            self.status = response.get("status") or kind.rsplit(".", 1)[1]
            details = response.get("incomplete_details") or {}
            self.incomplete_reason = details.get("reason") if isinstance(details, dict) else None
        elif kind == "response.failed":
            response = data.get("response") or {}
            error = response.get("error") or {}
            details = response.get("incomplete_details") or {}
            code = error.get("code") if isinstance(error, dict) else None
            if isinstance(error, str) and error:
                text = error
            elif error:
                said = error.get("message") if isinstance(error, dict) else None
                text = f"{code or 'unknown'}: {said or json.dumps(error)}"
            elif details.get("reason"):
                text = f"incomplete: {details['reason']}"
            else:
                text = "unknown error (no error details in response)"
            raise ProviderFailure(
                f"response failed: {text}", kind=kind_of_code(code), code=code or None
            )
        elif kind == "error":
            raise _error_event(data)
        return []

    def _open(self, kind: type) -> bool:
        return self.current is not None and isinstance(
            self.builder.message.content[self.current], kind
        )

    def _item_added(self, item: dict[str, Any]) -> list[StreamEvent]:
        builder = self.builder
        kind = item.get("type")
        if kind == "reasoning":
            event: StreamEvent = builder.thinking_start()
            self.summary_parts = 0
        elif kind == "message":
            event = builder.text_start()
        elif kind == "function_call":
            event = builder.tool_call_start(f"{item['call_id']}|{item['id']}", item["name"])
            self.args_text = ""
        else:
            return []
        self.item = item
        self.current = len(builder.message.content) - 1
        out = [event]
        if kind == "function_call" and item.get("arguments"):
            self.args_text = item["arguments"]
            out.append(builder.tool_call_delta(self.current, item["arguments"], parse_partial=True))
        return out

    def _item_done(self, item: dict[str, Any]) -> list[StreamEvent]:
        builder = self.builder
        kind = item.get("type")
        index = self.current
        if kind == "reasoning" and self._open(ThinkingContent):
            assert index is not None
            block = builder.message.content[index]
            assert isinstance(block, ThinkingContent)
            summary = "\n\n".join(s.get("text", "") for s in item.get("summary") or [])
            content = "\n\n".join(c.get("text", "") for c in item.get("content") or [])
            if summary or content:
                block.thinking = summary or content
            self.current = None
            return [builder.thinking_end(index, signature=json.dumps(item))]
        if kind == "message" and self._open(TextContent):
            assert index is not None
            block = builder.message.content[index]
            assert isinstance(block, TextContent)
            parts = item.get("content") or []
            final = "".join(
                p.get("text", "") if p.get("type") == "output_text" else p.get("refusal", "")
                for p in parts
            )
            if final:
                block.text = final
            self.current = None
            return [
                builder.text_end(index, signature=_text_signature(item["id"], item.get("phase")))
            ]
        if kind == "function_call":
            out: list[StreamEvent] = []
            if not self._open(ToolCall):  # an item that never had an "added" event
                out.append(builder.tool_call_start(f"{item['call_id']}|{item['id']}", item["name"]))
                index = len(builder.message.content) - 1
            assert index is not None
            text = self.args_text or item.get("arguments") or "{}"
            self.current = None
            out.append(builder.tool_call_end(index, _parse_object(text)))
            return out
        return []

    def _usage(self, raw: dict[str, Any] | None) -> None:
        if not raw:
            return
        cached = token_count(raw.get("input_tokens_details"), "cached_tokens")
        usage = Usage(
            input=max(0, token_count(raw, "input_tokens") - cached),
            output=token_count(raw, "output_tokens"),
            cache_read=cached,
            cache_write=0,
            total_tokens=token_count(raw, "total_tokens"),
        )
        self.builder.message.usage = compute_cost(self.model, usage)

    def finish(self) -> Iterable[StreamEvent]:
        status = self.status
        if status is None:
            raise ProviderFailure(
                "connection closed before the response was complete (no response.completed)"
            )
        if status == "incomplete" and self.incomplete_reason == "content_filter":
            raise ProviderFailure(
                "response stopped by the provider's content filter "
                "(incomplete: content_filter): the answer is cut short",
                kind="bad_request",
                code="content_filter",
            )
        if status == "incomplete":
            return [self.builder.done("length")]  # pi-ai says "stop" here; the limit was hit
        if status in ("failed", "cancelled"):
            raise ProviderFailure(f"response {status}")
        return [self.builder.done()]  # "toolUse" when there are tool calls, else "stop"


def _error_event(data: dict[str, Any]) -> ProviderFailure:
    """The failure of an ``error`` event: its code and message at the top level (the
    documented shape) or nested under ``error`` (what the API also sends)."""
    nested = data.get("error")
    source = nested if isinstance(nested, dict) else data
    code = source.get("code") or source.get("type") or data.get("code")
    message = source.get("message") or data.get("message")
    code = None if code is None else str(code)
    if not message:
        message = json.dumps(data)[:500]
    text = f"{code}: {message}" if code else str(message)
    return ProviderFailure(f"provider error in stream: {text}", kind=kind_of_code(code), code=code)


def _parse_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read
        return parse_partial_json(text)
    return value if isinstance(value, dict) else {}


stream_openai_responses = WireApi(build_request, ResponsesDecoder, "openai-responses")
"""Stream one openai-responses response as pi_trio stream events; never raises for
a provider failure (see :func:`pi_trio.providers.stream_wire`)."""
