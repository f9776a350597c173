"""Compaction's settings and its pure parts: how big a context is, where to cut it, what to ask
the summariser, and whether a provider's error says the context was too long.

pi-coding-agent 1.6 (``core/compaction``) is the reference for the behaviour: a context is
measured as the last assistant message's reported usage plus a chars/4 estimate of the messages
after it; it is compacted once that exceeds ``context_window - reserve_tokens``; the cut keeps
about ``keep_recent_tokens`` of the newest messages and falls only before a user-like or an
assistant message (a tool result stays after its call); what is cut off is summarised by the
model, and an earlier summary at the head is handed to the summariser to be updated. Nothing
here does I/O: the loop's :mod:`pi_trio.loop._compact` makes the request and applies the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, final

import attrs

from ._checks import instance_of, str_or_none
from .coding_messages import (
    BashExecutionMessage,
    BranchSummary,
    CompactionSummary,
    ExtensionMessage,
)
from .messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .models import Model

__all__ = [
    "Compaction",
    "context_tokens",
    "estimate_tokens",
    "find_cut",
    "is_context_overflow",
    "summary_prompt",
]


def _tokens(minimum: int) -> Any:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(
                f"Compaction({attribute.name}=...) takes a whole number of tokens >= {minimum}, "
                f"got {value!r}"
            )

    return check


@final
@attrs.frozen(kw_only=True)
class Compaction:
    """When and how an agent compacts its transcript (``pt.Agent(compaction=...)``).

    Attributes:
        reserve_tokens: room kept free in the model's context window for the next response:
            a request whose context exceeds ``model.context_window - reserve_tokens`` is
            compacted first (pi's 16,384).
        keep_recent_tokens: about how many tokens of the newest messages are kept as they are
            (pi's 20,000); the older ones are summarised.
        model: the model that writes summaries (a cheaper one, say); None: the run's model.
        instructions: added to every summary prompt ("keep the customer's order numbers").

    Raises:
        ValueError: a token count that is negative (or zero for ``keep_recent_tokens``).
        TypeError: ``model`` not a ``pt.Model``, ``instructions`` not a string.
    """

    reserve_tokens: int = attrs.field(default=16_384, validator=_tokens(0))
    keep_recent_tokens: int = attrs.field(default=20_000, validator=_tokens(1))
    model: Model | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(instance_of(Model, "a pt.Model or None")),
    )
    instructions: str | None = attrs.field(default=None, validator=str_or_none)


# --- measuring ---------------------------------------------------------------------------------

_IMAGE_CHARS = 4_800
"""What an image counts as, in characters (about 1,200 tokens), as pi estimates it."""


def _content_chars(content: str | Sequence[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ImageContent):
            chars += _IMAGE_CHARS
    return chars


def _assistant_chars(message: AssistantMessage) -> int:
    chars = 0
    for block in message.content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ThinkingContent):
            chars += len(block.thinking)
        elif isinstance(block, ToolCall):
            chars += len(block.name) + len(json.dumps(block.arguments))
    return chars


def _message_chars(message: AgentMessage) -> int:
    if isinstance(message, AssistantMessage):
        return _assistant_chars(message)
    if isinstance(message, UserMessage | ToolResultMessage | ExtensionMessage):
        return _content_chars(message.content)
    if isinstance(message, CompactionSummary | BranchSummary):
        return len(message.summary)
    if isinstance(message, BashExecutionMessage):
        return len(message.command) + len(message.output)
    if isinstance(message, SystemMessage):
        extra = sum(len(text) for text in (message.sections or {}).values() if text)
        tools = len(json.dumps([tool.name for tool in message.tools_added]))
        return _content_chars(message.content) + extra + (tools if message.tools_added else 0)
    return 0  # an application's own message: the model does not see it by default


def estimate_tokens(message: AgentMessage) -> int:
    """A message's size in tokens, estimated as characters / 4 rounded up (pi's heuristic,
    on the high side)."""
    return -(-_message_chars(message) // 4)


def _usage_tokens(usage: Usage) -> int:
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def _reported(message: AgentMessage, since: int | None) -> int:
    """The context size a response reported (0: it reported none that counts, or it is not
    newer than ``since``, a compaction's time: it measured the context before it)."""
    if not isinstance(message, AssistantMessage) or message.stop_reason in ("error", "aborted"):
        return 0
    if since is not None and message.timestamp <= since:
        return 0
    return _usage_tokens(message.usage)


def context_tokens(messages: Sequence[AgentMessage]) -> int:
    """The context's size: the last response's reported usage, plus the estimate of every
    message after it (all of them estimated when no response reported one). Behind a
    leading summary, a response older than the summary reported the context before that
    compaction: it is estimated instead (as pi skips its check for such a response)."""
    head = messages[0] if messages else None
    since = head.timestamp if isinstance(head, CompactionSummary) else None
    trailing = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        reported = _reported(message, since)
        if reported:
            return reported + trailing
        trailing += estimate_tokens(message)
    return trailing


# --- cutting -----------------------------------------------------------------------------------


def find_cut(messages: Sequence[AgentMessage], keep_recent_tokens: int) -> int:
    """The index of the first message to keep: about ``keep_recent_tokens`` of the newest
    messages stay, counted back from the end; the cut falls before a user-like or assistant
    message, never before a tool result (it stays with its call). A leading summary is never
    kept (it is updated instead). 0 when nothing can be cut off.
    """
    start = 1 if messages and isinstance(messages[0], CompactionSummary) else 0
    accumulated = 0
    for index in range(len(messages) - 1, start - 1, -1):
        accumulated += estimate_tokens(messages[index])
        if accumulated >= keep_recent_tokens:
            break
    else:
        return 0  # everything fits in what is kept
    for cut in range(max(index, start + 1), len(messages)):
        if not isinstance(messages[cut], ToolResultMessage):
            return cut
    for cut in range(index - 1, start, -1):  # trailing results over the budget: keep the call
        if not isinstance(messages[cut], ToolResultMessage):
            return cut
    return 0


# --- the summariser's request ------------------------------------------------------------------

SUMMARY_SYSTEM_PROMPT = (
    "You write checkpoint summaries of conversations between a user and an AI assistant. "
    "Read the conversation you are given and write only the summary, in the format asked for. "
    "Do not answer the conversation, do not carry on with its work."
)

_FORMAT = """Answer in this layout, briefly under each heading:

## Goal
What the user wants done (several goals if the work changed course).

## Constraints and preferences
What the user required or preferred; "(none)" if nothing was said.

## Progress
### Done
- [x] each finished step
### In progress
- [ ] the step under way
### Blocked
- what stands in the way, if anything

## Decisions
- **the decision**: why it was taken

## Next steps
1. what comes next, in order

## Context to keep
- names, paths, identifiers, numbers and error texts the work still needs, exactly as written

Quote file paths, function names and error messages exactly."""

_NEW = (
    "Above, inside <conversation>, is a conversation whose messages will be dropped. Write the "
    "summary another assistant will continue the work from.\n\n" + _FORMAT
)

_UPDATE = (
    "Above, inside <conversation>, are messages that came after the summary inside "
    "<previous-summary>. Write the summary again so that it covers both: keep everything the "
    "previous summary says that still holds, add what the new messages did and decided, move "
    "finished steps to Done, and bring the next steps up to date.\n\n" + _FORMAT
)

_RESULT_CHARS = 2_000
"""How much of one tool result the summariser sees (the rest is marked as left out)."""


def _text(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def _arguments(call: ToolCall) -> str:
    return ", ".join(f"{name}={json.dumps(value)}" for name, value in call.arguments.items())


def _transcript_text(messages: Sequence[Any]) -> str:
    """The messages as plain text, so the summariser reads them instead of carrying them on;
    thinking is left out, long tool results are shortened."""
    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage) and (text := _text(message.content)):
            parts.append(f"[User]: {text}")
        elif isinstance(message, AssistantMessage):
            text = _text([b for b in message.content if isinstance(b, TextContent)])
            if text:
                parts.append(f"[Assistant]: {text}")
            calls = [f"{call.name}({_arguments(call)})" for call in message.tool_calls]
            if calls:
                parts.append(f"[Assistant called]: {'; '.join(calls)}")
        elif isinstance(message, ToolResultMessage) and (text := _text(message.content)):
            if len(text) > _RESULT_CHARS:
                left_out = len(text) - _RESULT_CHARS
                text = f"{text[:_RESULT_CHARS]}\n[{left_out} more characters left out]"
            parts.append(f"[Tool result]: {text}")
    return "\n\n".join(parts)


def summary_prompt(
    messages: Sequence[Any], previous_summary: str | None, instructions: str | None
) -> str:
    """The user message of a summary request: ``messages`` (as the model sees them) to
    summarise, the summary to update if there is one, and the application's instructions."""
    prompt = f"<conversation>\n{_transcript_text(messages)}\n</conversation>\n\n"
    if previous_summary is not None:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    prompt += _NEW if previous_summary is None else _UPDATE
    if instructions:
        prompt += f"\n\nAlso pay attention to: {instructions}"
    return prompt


# --- "the prompt is too long" ------------------------------------------------------------------

_OVERFLOW = re.compile(
    "|".join(
        (
            r"prompt (?:is )?too long",  # Anthropic ("prompt is too long: N tokens > M maximum")
            r"request_too_large",  # Anthropic, a request over its byte limit (HTTP 413)
            r"prompt exceeds max length",
            r"exceeds the context window",  # OpenAI, both wire APIs
            r"maximum context length",  # OpenAI-compatible servers, vLLM, OpenRouter, LiteLLM
            r"context_length_exceeded|context length exceeded",  # OpenAI's error code
            r"context window exceeded|context window exceeds limit",
            r"input token count.*exceeds the maximum",  # Google Gemini
            r"input is too long for requested model",  # Amazon Bedrock
            r"maximum prompt length is \d+",  # xAI
            r"reduce the length of the messages",  # Groq
            r"maximum allowed input length",
            r"is longer than the model'?s context length",  # Together
            r"exceeds the limit of \d+",
            r"exceeds the available context size",  # llama.cpp server
            r"greater than the context length",  # LM Studio
            r"exceeded model token limit",
            r"too large for model with \d+ maximum context length",  # Mistral
            r"but the configured context size is",
            r"model_context_window_exceeded",
            r"prompt too long; exceeded (?:max )?context length",  # Ollama
            r"range of input length should be",  # DashScope
            r"too many tokens|token limit exceeded",
            r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",  # a bare HTTP 413
        )
    ),
    re.IGNORECASE,
)
_NOT_OVERFLOW = re.compile(
    r"^(?:Throttling error|Service unavailable):|rate limit|too many requests", re.IGNORECASE
)


def is_context_overflow(message: AssistantMessage, context_window: int) -> bool:
    """Whether ``message`` failed, or was cut short, because its request did not fit the
    model's context window.

    True for a response with stop_reason "error" whose error text is one a provider sends for
    a prompt that is too long (OpenAI's ``context_length_exceeded`` and "maximum context
    length", Anthropic's "prompt is too long", Gemini's "input token count exceeds the
    maximum", llama.cpp's, Ollama's, LM Studio's and other servers' texts), but not for rate
    limits; and, with ``context_window`` > 0, for a response whose reported input exceeds the
    window (a server that truncates silently) or that stopped at "length" with no output after
    an input that filled the window.
    """
    if message.stop_reason == "error" and message.error_message:
        text = message.error_message
        if not _NOT_OVERFLOW.search(text) and _OVERFLOW.search(text):
            return True
    if context_window > 0:
        used = message.usage.input + message.usage.cache_read
        if message.stop_reason == "stop" and used > context_window:
            return True
        if message.stop_reason == "length" and message.usage.output == 0:
            return used >= context_window * 0.99
    return False
