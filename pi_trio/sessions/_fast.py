"""A fast reader and writer for the messages of a log.

:func:`pt.from_json` checks and reports every problem of any JSON, at ~20 µs per assistant
message here; resuming a 1,000-turn session reads ~2,000 messages, which made resume alone
~60 ms. The log's messages are pi's JSON that pi_trio wrote itself, so this reader builds the
same objects directly for the shapes pi_trio writes (user, assistant and tool-result messages
with text, thinking, image and tool-call blocks) and returns None for anything else (a custom
message, a key it does not know, a value of another type), which then goes through
:func:`pt.from_json` and gets its checks and its error messages. The session tests compare both
readers on every message they log.

:func:`message_json` is the writing side: :func:`pt.to_json` goes through cattrs (~7 µs per
assistant message here, on the Trio thread, for every message a durable agent logs). For the
same shapes (exact pi_trio classes, free-form values that are plain JSON within a depth well
under the wire format's limit) it builds the same dict directly, and returns None for anything
else, which then takes :func:`pt.to_json` with its hooks, checks and errors. Free-form values
(tool arguments, details) are checked, not copied: the result is for encoding at once (the
session tests compare both writers on every message they log).
"""

from __future__ import annotations

import math
from typing import Any

from ..messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageCost,
    UserMessage,
)

__all__ = ["content_json", "fast_message", "is_plain_json", "message_json"]

_TEXT_KEYS = frozenset({"type", "text", "textSignature"})
_THINKING_KEYS = frozenset({"type", "thinking", "thinkingSignature", "redacted"})
_IMAGE_KEYS = frozenset({"type", "data", "mimeType"})
_CALL_KEYS = frozenset({"type", "id", "name", "arguments", "thoughtSignature"})
_USAGE_KEYS = frozenset({"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"})
_COST_KEYS = frozenset({"input", "output", "cacheRead", "cacheWrite", "total"})
_USER_KEYS = frozenset({"role", "content", "timestamp"})
_ASSISTANT_KEYS = frozenset(
    {
        "role", "content", "api", "provider", "model", "usage", "stopReason", "errorMessage",
        "timestamp", "responseId", "responseModel",
    }
)  # fmt: skip
_RESULT_KEYS = frozenset(
    {"role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"}
)
_STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted"})


class _Unusual(Exception):
    """Not a shape this reader builds: let from_json read it."""


def _str(value: Any) -> str:
    if type(value) is not str:
        raise _Unusual
    return value


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    return _str(value)


def _int(value: Any) -> int:
    if type(value) is not int:
        raise _Unusual
    return value


def _number(value: Any) -> float:
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return value  # type: ignore[no-any-return]
    raise _Unusual


def _plain_json(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        for item in value.values():
            _plain_json(item)
    elif kind is list:
        for item in value:
            _plain_json(item)
    elif kind is float:
        if not math.isfinite(value):
            raise _Unusual
    elif value is not None and kind not in (str, int, bool):
        raise _Unusual
    return value


def _block(data: Any) -> Any:
    if type(data) is not dict:
        raise _Unusual
    tag = data.get("type")
    if tag == "text":
        if not data.keys() <= _TEXT_KEYS:
            raise _Unusual
        return TextContent(_str(data["text"]), _opt_str(data.get("textSignature")))
    if tag == "toolCall":
        if not data.keys() <= _CALL_KEYS:
            raise _Unusual
        arguments = data["arguments"]
        if type(arguments) is not dict:
            raise _Unusual
        return ToolCall(
            _str(data["id"]),
            _str(data["name"]),
            _plain_json(arguments),
            _opt_str(data.get("thoughtSignature")),
        )
    if tag == "thinking":
        if not data.keys() <= _THINKING_KEYS:
            raise _Unusual
        redacted = data.get("redacted")
        if redacted is not None and type(redacted) is not bool:
            raise _Unusual
        return ThinkingContent(
            _str(data["thinking"]), _opt_str(data.get("thinkingSignature")), bool(redacted)
        )
    if tag == "image":
        if data.keys() != _IMAGE_KEYS:
            raise _Unusual
        return ImageContent(_str(data["data"]), _str(data["mimeType"]))
    raise _Unusual


def _usage(data: Any) -> Usage:
    if type(data) is not dict or data.keys() != _USAGE_KEYS:
        raise _Unusual
    cost = data["cost"]
    if type(cost) is not dict or cost.keys() != _COST_KEYS:
        raise _Unusual
    return Usage(
        _int(data["input"]),
        _int(data["output"]),
        _int(data["cacheRead"]),
        _int(data["cacheWrite"]),
        _int(data["totalTokens"]),
        UsageCost(
            _number(cost["input"]),
            _number(cost["output"]),
            _number(cost["cacheRead"]),
            _number(cost["cacheWrite"]),
            _number(cost["total"]),
        ),
    )


def _blocks(data: Any, allowed: tuple[type[Any], ...]) -> list[Any]:
    if type(data) is not list:
        raise _Unusual
    blocks = [_block(item) for item in data]
    for block in blocks:
        if not isinstance(block, allowed):
            raise _Unusual
    return blocks


def _message(data: Any) -> AgentMessage:
    if type(data) is not dict:
        raise _Unusual
    role = data.get("role")
    if role == "assistant":
        if not data.keys() <= _ASSISTANT_KEYS:
            raise _Unusual
        stop = data["stopReason"]
        if stop not in _STOP_REASONS:
            raise _Unusual
        return AssistantMessage(
            _blocks(data["content"], (TextContent, ThinkingContent, ToolCall)),
            _str(data["api"]),
            _str(data["provider"]),
            _str(data["model"]),
            _usage(data["usage"]),
            stop,
            _opt_str(data.get("errorMessage")),
            _int(data["timestamp"]),
            _opt_str(data.get("responseId")),
            _opt_str(data.get("responseModel")),
        )
    if role == "toolResult":
        if not data.keys() <= _RESULT_KEYS:
            raise _Unusual
        is_error = data["isError"]
        if type(is_error) is not bool:
            raise _Unusual
        return ToolResultMessage(
            _str(data["toolCallId"]),
            _str(data["toolName"]),
            _blocks(data["content"], (TextContent, ImageContent)),
            _plain_json(data.get("details")),
            is_error,
            _int(data["timestamp"]),
        )
    if role == "user":
        if data.keys() != _USER_KEYS:
            raise _Unusual
        content = data["content"]
        if type(content) is not str:
            content = _blocks(content, (TextContent, ImageContent))
        return UserMessage(content, _int(data["timestamp"]))
    raise _Unusual


def fast_message(data: Any) -> AgentMessage | None:
    """The message ``data`` describes, or None when it is not a shape this reader builds."""
    try:
        return _message(data)
    except (_Unusual, KeyError):
        return None


# --- writing -------------------------------------------------------------------------------

_PLAIN_DEPTH = 32
"""How deep a free-form value the fast writer takes (arrays/objects); deeper ones go through
:func:`pt.to_json`, whose limit (64) and errors then apply."""


def _check_plain(value: Any, depth: int) -> None:
    """Raise :class:`_Unusual` unless ``value`` is plain JSON (exact types, string keys,
    finite numbers) nesting at most ``depth`` arrays/objects."""
    cls = value.__class__
    if cls is dict:
        if depth <= 0:
            raise _Unusual
        for key, item in value.items():
            if key.__class__ is not str:
                raise _Unusual
            kind = item.__class__
            if not (kind is str or kind is int or kind is bool or item is None):
                _check_plain(item, depth - 1)
    elif cls is list:
        if depth <= 0:
            raise _Unusual
        for item in value:
            kind = item.__class__
            if not (kind is str or kind is int or kind is bool or item is None):
                _check_plain(item, depth - 1)
    elif cls is float:
        if not math.isfinite(value):
            raise _Unusual
    elif not (cls is str or cls is int or cls is bool or value is None):
        raise _Unusual


def _free(value: Any) -> Any:
    _check_plain(value, _PLAIN_DEPTH)
    return value


_BLOCK_TYPES = frozenset({TextContent, ThinkingContent, ToolCall, ImageContent})
_MESSAGE_TYPES = frozenset({AssistantMessage, ToolResultMessage, UserMessage})


def _block_json(block: Any) -> dict[str, Any]:
    cls = block.__class__
    if cls not in _BLOCK_TYPES or block.extra is not None:  # extra: to_json writes it back
        raise _Unusual
    if cls is TextContent:
        out: dict[str, Any] = {"type": "text", "text": block.text}
        if block.text_signature is not None:
            out["textSignature"] = block.text_signature
        return out
    if cls is ToolCall:
        arguments = block.arguments
        if arguments.__class__ is not dict:
            raise _Unusual
        if block.namespace is not None or block.arguments_error is not None:
            raise _Unusual
        out = {"type": "toolCall", "id": block.id, "name": block.name}
        out["arguments"] = _free(arguments)
        if block.thought_signature is not None:
            out["thoughtSignature"] = block.thought_signature
        return out
    if cls is ThinkingContent:
        redacted = block.redacted
        if redacted.__class__ is not bool:
            raise _Unusual
        out = {"type": "thinking", "thinking": block.thinking}
        if block.thinking_signature is not None:
            out["thinkingSignature"] = block.thinking_signature
        if redacted:
            out["redacted"] = True
        return out
    if cls is ImageContent:
        return {"type": "image", "data": block.data, "mimeType": block.mime_type}
    raise _Unusual


def _blocks_json(blocks: Any, allowed: tuple[type[Any], ...]) -> list[dict[str, Any]]:
    if blocks.__class__ is not list:
        raise _Unusual
    out = []
    for block in blocks:
        if block.__class__ not in allowed:
            raise _Unusual
        out.append(_block_json(block))
    return out


_ASSISTANT_BLOCKS = (TextContent, ThinkingContent, ToolCall)
_RESULT_BLOCKS = (TextContent, ImageContent)


def _usage_json(usage: Any) -> dict[str, Any]:
    if usage.__class__ is not Usage:
        raise _Unusual
    cost = usage.cost
    if cost.__class__ is not UsageCost or usage.extra is not None or cost.extra is not None:
        raise _Unusual
    return {
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "totalTokens": usage.total_tokens,
        "cost": {
            "input": cost.input,
            "output": cost.output,
            "cacheRead": cost.cache_read,
            "cacheWrite": cost.cache_write,
            "total": cost.total,
        },
    }


def _has_pi16_fields(message: AssistantMessage) -> bool:
    """Whether ``message`` sets a field of pi 1.6's that this writer leaves to to_json."""
    return not (
        message.duration_ms is None
        and message.thinking_level is None
        and message.provider_thinking_level is None
        and message.raw_stop_reason is None
        and message.end_turn is None
        and message.diagnostics is None
        and message.deferred is None
    )


def _message_json(message: Any) -> dict[str, Any]:
    cls = message.__class__
    if cls not in _MESSAGE_TYPES or message.extra is not None:  # extra: to_json writes it
        raise _Unusual
    if cls is AssistantMessage:
        if _has_pi16_fields(message):
            raise _Unusual
        out: dict[str, Any] = {
            "role": "assistant",
            "content": _blocks_json(message.content, _ASSISTANT_BLOCKS),
            "api": message.api,
            "provider": message.provider,
            "model": message.model,
            "usage": _usage_json(message.usage),
            "stopReason": message.stop_reason,
            "timestamp": message.timestamp,
        }  # the fields omitted while None come last, as to_json writes them
        if message.error_message is not None:
            out["errorMessage"] = message.error_message
        if message.response_id is not None:
            out["responseId"] = message.response_id
        if message.response_model is not None:
            out["responseModel"] = message.response_model
        return out
    if cls is ToolResultMessage:
        if not (message.usage is None and message.nested_calls is None):
            raise _Unusual
        if message.duration_ms is not None:
            raise _Unusual
        out = {
            "role": "toolResult",
            "toolCallId": message.tool_call_id,
            "toolName": message.tool_name,
            "content": _blocks_json(message.content, _RESULT_BLOCKS),
            "isError": message.is_error,
            "timestamp": message.timestamp,
        }
        if message.details is not None:  # omitted while None, and then last
            out["details"] = _free(message.details)
        return out
    if cls is UserMessage:
        content = message.content
        if content.__class__ is not str:
            content = _blocks_json(content, _RESULT_BLOCKS)
        return {"role": "user", "content": content, "timestamp": message.timestamp}
    raise _Unusual


def message_json(message: Any) -> dict[str, Any] | None:
    """``pt.to_json(message)``, or None when ``message`` is not a shape this writer builds."""
    try:
        return _message_json(message)
    except _Unusual:
        return None


def content_json(blocks: Any) -> list[dict[str, Any]] | None:
    """``pt.to_json(blocks)`` for a tool result's content (text and image blocks), or None."""
    try:
        return _blocks_json(blocks, _RESULT_BLOCKS)
    except _Unusual:
        return None


def is_plain_json(value: Any) -> bool:
    """True when ``pt.to_json(value)`` is ``value`` itself as JSON: plain JSON values (exact
    types, string keys, finite numbers) nesting a few levels at most."""
    try:
        _check_plain(value, _PLAIN_DEPTH)
    except _Unusual:
        return False
    return True
