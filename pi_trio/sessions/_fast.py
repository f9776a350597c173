"""A fast reader for the messages of a log.

:func:`pt.from_json` checks and reports every problem of any JSON, at ~20 µs per assistant
message here; resuming a 1,000-turn session reads ~2,000 messages, which made resume alone
~60 ms. The log's messages are pi's JSON that pi_trio wrote itself, so this reader builds the
same objects directly for the shapes pi_trio writes (user, assistant and tool-result messages
with text, thinking, image and tool-call blocks) and returns None for anything else (a custom
message, a key it does not know, a value of another type), which then goes through
:func:`pt.from_json` and gets its checks and its error messages. The session tests compare both
readers on every message they log.

There is no writing side: an entry is written with :func:`pt.to_json` itself (one codec). A
copy of it for the log's common shapes saved ~4 µs per message, under 2% of a durable turn,
which DESIGN 9.1 does not let stand beside the function it copies.
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

__all__ = ["fast_message"]

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
