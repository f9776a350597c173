"""The "bedrock-converse-stream" wire API (Amazon Bedrock's ConverseStream):
``POST {endpoint}/model/{id}/converse-stream``, answered with AWS's binary event stream.

Credentials, region, signing and frame decoding are in :mod:`._aws` (botocore, the optional
extra ``pi-trio[bedrock]``). Each frame is one event: ``messageStart``,
``contentBlockStart`` (tool calls only), ``contentBlockDelta`` (text, ``reasoningContent``
or tool-call input JSON), ``contentBlockStop``, ``messageStop`` (the stop reason) and
``metadata`` (usage); an exception frame (throttling, validation, ...) is an error.
A body that ends before ``messageStop`` is an error. A stop by a guardrail or the content
filter is an error naming it (pi-ai reports "An unknown error occurred").
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Sequence
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
from ._aws import EVENTSTREAM_FRAMING, converse_stream_url, resolve_auth, signed
from ._builder import MessageBuilder
from ._failure import ProviderFailure, text_piece
from ._log_guard import guard_secrets
from ._options import StreamOptions, forced_tool
from ._sse import SSEEvent
from ._stream import PreparedWireApi, WireRequest, parse_event_json
from ._transform import transform_messages
from ._usage import compute_cost, token_count

__all__ = ["build_body", "prepare_request", "stream_bedrock"]

_IMAGE_FORMATS = {
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
}
_DEFAULT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_EXCEPTIONS = {  # pi-ai's prefixes (pi's retry logic matches them), and the failure kind
    "internalServerException": ("Internal server error", "server"),
    "modelStreamErrorException": ("Model stream error", "server"),
    "validationException": ("Validation error", "bad_request"),
    "throttlingException": ("Throttling error", "rate_limit"),
    "serviceUnavailableException": ("Service unavailable", "overloaded"),
}
_FILTERS = {
    "guardrail_intervened": "a Bedrock guardrail intervened",
    "content_filtered": "Bedrock's content filter blocked the response",
}


def _names(model: Model) -> list[str]:
    values = [model.id, model.name] if model.name else [model.id]
    out = []
    for value in values:
        lower = value.lower()
        out += [lower, "".join("-" if c in " _.:" else c for c in lower)]
    return out


def _is_claude(model: Model) -> bool:
    return any(
        "anthropic.claude" in n or "anthropic/claude" in n or "claude" in n for n in _names(model)
    )


def _adaptive(model: Model) -> bool:
    return any(s in n for n in _names(model) for s in ("opus-4-6", "opus-4-7", "sonnet-4-6"))


def _caches(model: Model) -> bool:
    names = _names(model)
    if not any("claude" in n for n in names):
        return os.environ.get("AWS_BEDROCK_FORCE_CACHE") == "1"
    return any("-4-" in n or "claude-3-7-sonnet" in n or "claude-3-5-haiku" in n for n in names)


def _image(block: ImageContent) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(block.mime_type)
    if fmt is None:
        raise ValueError(f"Bedrock takes jpeg, png, gif or webp images, not {block.mime_type}")
    # the JSON form of the SDK's bytes blob is base64
    base64.b64decode(block.data, validate=True)
    return {"image": {"format": fmt, "source": {"bytes": block.data}}}


def _normalize_id(tool_call_id: str, source: AssistantMessage) -> str:
    cleaned = "".join(
        c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in tool_call_id
    )
    return cleaned[:64]


def _result_block(message: ToolResultMessage) -> dict[str, Any]:
    content = [
        _image(b) if isinstance(b, ImageContent) else {"text": b.text} for b in message.content
    ]
    status = "error" if message.is_error else "success"
    return {"toolResult": {"toolUseId": message.tool_call_id, "content": content, "status": status}}


def _assistant_blocks(model: Model, message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"text": block.text})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"toolUse": {"toolUseId": block.id, "name": block.name, "input": block.arguments}}
            )
        elif isinstance(block, ThinkingContent) and block.thinking.strip():
            if not _is_claude(model):
                blocks.append({"reasoningContent": {"reasoningText": {"text": block.thinking}}})
            elif not (block.thinking_signature or "").strip():
                blocks.append({"text": block.thinking})  # an unsigned thinking block is refused
            else:
                text = {"text": block.thinking, "signature": block.thinking_signature}
                blocks.append({"reasoningContent": {"reasoningText": text}})
    return blocks


def convert_messages(model: Model, context: Context, cache: bool) -> list[dict[str, Any]]:
    """Bedrock ``messages``: consecutive tool results join one user message."""
    out: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model, _normalize_id):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                content: list[dict[str, Any]] = [{"text": message.content}]
            else:
                content = [
                    {"text": b.text} if isinstance(b, TextContent) else _image(b)
                    for b in message.content
                ]
            out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(model, message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        else:
            assert isinstance(message, ToolResultMessage)
            last = out[-1] if out else None
            if last and last["role"] == "user" and "toolResult" in last["content"][-1]:
                last["content"].append(_result_block(message))
            else:
                out.append({"role": "user", "content": [_result_block(message)]})
    if cache and out and out[-1]["role"] == "user":
        out[-1]["content"].append({"cachePoint": _cache_point()})
    return out


def _cache_point() -> dict[str, str]:
    return {"type": "default"}


def _tool_config(context: Context, options: StreamOptions) -> dict[str, Any] | None:
    choice = options.tool_choice
    if not context.tools or choice == "none":
        return None
    tools = [
        {
            "toolSpec": {
                "name": t.name,
                "description": t.description,
                "inputSchema": {"json": t.parameters},
            }
        }
        for t in context.tools
    ]
    config: dict[str, Any] = {"tools": tools}
    if choice is not None:
        word, name = forced_tool(choice)
        if name is not None:
            config["toolChoice"] = {"tool": {"name": name}}
        else:
            config["toolChoice"] = {"any": {}} if word == "required" else {"auto": {}}
    return config


def _thinking_fields(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    level = options.reasoning
    if not level or not model.reasoning or not _is_claude(model):
        return None
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
    gov = region.lower().startswith("us-gov-") or model.id.lower().startswith(
        ("us-gov.", "arn:aws-us-gov:")
    )
    display = {} if gov else {"display": "summarized"}
    if _adaptive(model):
        effort = {"minimal": "low", "low": "low", "medium": "medium"}.get(level, "high")
        if level == "xhigh" and any("opus-4-7" in n for n in _names(model)):
            effort = "xhigh"
        return {"thinking": {"type": "adaptive", **display}, "output_config": {"effort": effort}}
    key = "high" if level == "xhigh" else level
    custom = getattr(options.thinking_budgets, key, None) if options.thinking_budgets else None
    budget = custom if custom is not None else _DEFAULT_BUDGETS[level]
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget, **display},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"],
    }


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The ConverseStream request body (the SDK's JSON form of ``ConverseStreamCommand``)."""
    retention = options.cache_retention or (
        "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"
    )
    cache = retention != "none" and _caches(model)
    body: dict[str, Any] = {"messages": convert_messages(model, context, cache)}
    if context.system_prompt:
        system: list[dict[str, Any]] = [{"text": context.system_prompt}]
        if cache:
            point = _cache_point()
            if retention == "long":
                point["ttl"] = "1h"
            system.append({"cachePoint": point})
        body["system"] = system
    inference: dict[str, Any] = {}
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens else None)
    thinking = _thinking_fields(model, options)
    if thinking and "budget_tokens" in thinking["thinking"]:
        budget = thinking["thinking"]["budget_tokens"]
        total = min((max_tokens or 0) + budget, model.max_tokens)
        if total <= budget:
            thinking["thinking"]["budget_tokens"] = max(0, total - 1024)
        max_tokens = total
    if max_tokens:
        inference["maxTokens"] = max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    body["inferenceConfig"] = inference
    tool_config = _tool_config(context, options)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    if thinking is not None:
        body["additionalModelRequestFields"] = thinking
    return body


async def prepare_request(model: Model, context: Context, options: StreamOptions) -> WireRequest:
    """Credentials (see :mod:`._aws`), then the signed request. Checkpoint: a worker
    thread reads the AWS credential chain; cancelled, it is abandoned."""
    body = json.dumps(build_body(model, context, options)).encode()
    auth = await resolve_auth(model.base_url, options.api_key)
    url = converse_stream_url(auth.endpoint, model.id)
    headers = {
        "content-type": "application/json",
        "accept": EVENTSTREAM_FRAMING.media_type,
        **(model.headers or {}),
        **(options.headers or {}),
    }
    with guard_secrets(auth.secrets):  # botocore logs the canonical request at DEBUG
        headers = signed(auth, url, headers, body)
    return WireRequest(
        url,
        headers,
        body,
        framing=EVENTSTREAM_FRAMING,
        secrets=auth.secrets,
    )


class BedrockDecoder:
    """ConverseStream events -> stream events."""

    def __init__(self, model: Model, builder: MessageBuilder) -> None:
        self.model = model
        self.builder = builder
        self.blocks: dict[int, int] = {}  # Bedrock's contentBlockIndex -> our content index
        self.stop_reason: str | None = None

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]:
        kind = event.event
        if kind.startswith(("exception:", "error:")):
            raise self._exception(kind.partition(":")[2], event)
        data = parse_event_json(event)
        if kind == "contentBlockDelta":
            return self._delta(data["contentBlockIndex"], data.get("delta") or {})
        if kind == "contentBlockStart":
            return self._start(data["contentBlockIndex"], data.get("start") or {})
        if kind == "contentBlockStop":
            return self._stop(data["contentBlockIndex"])
        if kind == "messageStop":
            self.stop_reason = data.get("stopReason") or ""
        elif kind == "metadata":
            self._usage(data.get("usage"))
        elif kind == "messageStart" and data.get("role") != "assistant":
            raise ProviderFailure(f"the response started a {data.get('role')!r} message")
        return ()

    def _exception(self, name: str, event: SSEEvent) -> ProviderFailure:
        try:
            text = json.loads(event.data).get("message") or event.data
        except (ValueError, AttributeError):
            text = event.data
        prefix, kind = _EXCEPTIONS.get(name, (name or "Bedrock error", "server"))
        return ProviderFailure(f"{prefix}: {text}", kind=kind, code=name or None)  # type: ignore[arg-type]

    def _start(self, index: int, start: dict[str, Any]) -> Sequence[StreamEvent]:
        tool = start.get("toolUse")
        if not tool:
            return ()
        event = self.builder.tool_call_start(tool.get("toolUseId") or "", tool.get("name") or "")
        self.blocks[index] = event.content_index
        return (event,)

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        builder = self.builder
        out: list[StreamEvent] = []
        position = self.blocks.get(index)
        if "text" in delta:
            if position is None:
                out.append(builder.text_start())
                position = self.blocks[index] = len(builder.message.content) - 1
            if isinstance(builder.message.content[position], TextContent):
                out.append(builder.text_delta(position, text_piece(delta["text"], "a text delta")))
        elif "toolUse" in delta:
            if position is not None and isinstance(builder.message.content[position], ToolCall):
                piece = delta["toolUse"].get("input") or ""
                out.append(builder.tool_call_delta(position, piece, parse_partial=True))
        elif "reasoningContent" in delta:
            if position is None:
                out.append(builder.thinking_start())
                position = self.blocks[index] = len(builder.message.content) - 1
            block = builder.message.content[position]
            if isinstance(block, ThinkingContent):
                reasoning = delta["reasoningContent"]
                if reasoning.get("text"):
                    out.append(
                        builder.thinking_delta(
                            position, text_piece(reasoning["text"], "a thinking delta")
                        )
                    )
                if reasoning.get("signature"):
                    block.thinking_signature = (block.thinking_signature or "") + reasoning[
                        "signature"
                    ]
        return out

    def _stop(self, index: int) -> Sequence[StreamEvent]:
        position = self.blocks.pop(index, None)
        if position is None:
            return ()
        block = self.builder.message.content[position]
        if isinstance(block, TextContent):
            return (self.builder.text_end(position),)
        if isinstance(block, ThinkingContent):
            return (self.builder.thinking_end(position),)
        return (self.builder.tool_call_end(position),)

    def _usage(self, raw: dict[str, Any] | None) -> None:
        if not raw:
            return
        usage = Usage(
            input=token_count(raw, "inputTokens"),
            output=token_count(raw, "outputTokens"),
            cache_read=token_count(raw, "cacheReadInputTokens"),
            cache_write=token_count(raw, "cacheWriteInputTokens"),
        )
        usage.total_tokens = token_count(raw, "totalTokens") or usage.input + usage.output
        self.builder.message.usage = compute_cost(self.model, usage)

    def finish(self) -> Iterable[StreamEvent]:
        reason = self.stop_reason
        if reason is None:
            raise ProviderFailure(
                "connection closed before the response was complete (no messageStop)",
                kind="connection",
            )
        out: list[StreamEvent] = []
        for index in sorted(self.blocks):  # blocks the service never stopped
            out += self._stop(index)
        if reason in ("end_turn", "stop_sequence"):
            out.append(self.builder.done("stop"))
        elif reason in ("max_tokens", "model_context_window_exceeded"):
            out.append(self.builder.done("length"))
        elif reason == "tool_use":
            out.append(self.builder.done("toolUse"))
        elif reason in _FILTERS:
            raise ProviderFailure(f"{_FILTERS[reason]} (stopReason {reason})", code=reason)
        else:
            raise ProviderFailure(f"the model stopped with stopReason {reason!r}", code=reason)
        return out


stream_bedrock = PreparedWireApi(prepare_request, BedrockDecoder, "bedrock-converse-stream")
"""Stream one bedrock-converse-stream response as pi_trio stream events; never raises for a
provider failure, a missing credential or a missing botocore included."""
