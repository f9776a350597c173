"""The tool results the batch makes itself: errors, time-outs, calls a steer stopped."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from logging import WARNING
from typing import Any, Final

import attrs

from .._callbacks import call_maybe_async, exception_text, hook_answer
from .._errors import ToolArgumentError
from .._logging import log_failure, tools_logger
from ..events import ToolResult
from ..messages import ImageContent, TextContent, ToolCall, ToolResultContent, Usage
from ._agent_tool import AgentTool
from ._hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)

__all__ = [
    "after_hook",
    "as_tool_result",
    "before_hook",
    "counted_usage",
    "error_result",
    "log_prepare_failure",
    "merged_result",
    "steered_result",
    "timed_out_result",
]


def error_result(text: str) -> ToolResult:
    """A tool result carrying only an error text (``details`` empty, like pi's)."""
    return ToolResult([TextContent(text)], details={})


def counted_usage(result: ToolResult, spent: Usage | None) -> ToolResult:
    """``result``, with ``spent`` (the last usage its call's updates reported) when it gives
    none itself: a call cut short (its timeout, a steering message, an abort of an enclosing
    run) or failing still reports what it spent."""
    if spent is None or result.usage is not None:
        return result
    return attrs.evolve(result, usage=spent)


def timed_out_result(tool: AgentTool, timeout: float) -> ToolResult:
    details = {"timed_out": True, "timeout_s": timeout}
    if not tool.is_async:
        details["thread_abandoned"] = True  # a sync tool's thread cannot be stopped
    text = f"Tool {tool.name} timed out after {timeout:g} s"
    return ToolResult([TextContent(text)], details=details, is_error=True)


def steered_result(name: str, *, started: bool, abandoned: bool = False) -> ToolResult:
    """The result of a call that a steering message stopped ("at_tool_boundary")."""
    if started:
        text = f"Tool {name} was stopped: a steering message was queued while it ran"
    else:
        text = f"Tool {name} was not run: a steering message was queued before it started"
    details: dict[str, Any] = {"stopped_by": "steering", "started": started}
    if abandoned:
        details["thread_abandoned"] = True  # a sync tool's thread cannot be stopped
    return ToolResult([TextContent(text)], details=details, is_error=True)


def as_tool_result(value: Any) -> ToolResult:
    """What a tool returned, as a result: a ``ToolResult`` (its content a list of text and
    image blocks, or one text) or a text. The loop checks every result with it, before it
    reaches a transcript or a log; so does a session's re-run of a ``replay="safe"`` call.

    Raises:
        TypeError: anything else (a bug of the tool, which becomes its error result).
    """
    if isinstance(value, ToolResult):
        content = checked_content(value.content, "tool returned a ToolResult")
        return value if content is value.content else attrs.evolve(value, content=content)
    if isinstance(value, str):
        return ToolResult([TextContent(value)])
    raise TypeError(f"tool returned {type(value).__name__}, expected pt.ToolResult or str")


_BLOCKS: Final = (TextContent, ImageContent)


def checked_content(content: Any, whose: str) -> list[ToolResultContent]:
    """``content`` as a result's content: a list (or tuple) of text and image blocks, or one
    text.

    Raises:
        TypeError: anything else (naming ``whose`` content it is and what it holds).
    """
    if type(content) is list:
        for block in content:  # per tool call: no enumerate, no union built per block
            if not isinstance(block, _BLOCKS):
                index = content.index(block)
                raise TypeError(
                    f"{whose} whose content[{index}] is {type(block).__name__}, expected "
                    "pt.TextContent or pt.ImageContent"
                )
        return content
    if isinstance(content, str):
        return [TextContent(content)]
    if isinstance(content, list | tuple):  # a tuple, or a list of another class
        return checked_content(list(content), whose)
    raise TypeError(
        f"{whose} whose content is {type(content).__name__}, expected a list of pt.TextContent "
        "and pt.ImageContent (or one text)"
    )


def merged_result(result: ToolResult, override: AfterToolCallResult) -> ToolResult:
    """``result`` with what ``after_tool_call`` replaced (its fields that are not None).

    Raises:
        TypeError: the content it gives is not a result's (:func:`checked_content`).
    """
    # pi 1.6: structured content not replaced along with the content may no longer match
    structured = override.structured_content
    if structured is None and override.content is None:
        structured = result.structured_content
    content = override.content
    return ToolResult(
        content=result.content
        if content is None
        else checked_content(content, "after_tool_call gave a result"),
        details=result.details if override.details is None else override.details,
        terminate=result.terminate if override.terminate is None else override.terminate,
        structured_content=structured,
        usage=result.usage if override.usage is None else override.usage,
    )


def log_prepare_failure(call: ToolCall, exc: Exception, text: str) -> None:
    """A call that failed before it ran: invalid arguments are the model's to fix (INFO, no
    traceback); a raising ``prepare_arguments``, ``before_tool_call`` or approval policy is
    the application's."""
    if isinstance(exc, ToolArgumentError):
        tools_logger.info("tool %s (call %s): %s", call.name, call.id, text)
        return
    log_failure(
        tools_logger, WARNING, exc,
        "tool %s (call %s) failed before it ran (prepare_arguments, before_tool_call or "
        "requires_approval); the model sees: %s",
        call.name, call.id, text,
    )  # fmt: skip


async def before_hook(
    hook: Callable[
        [BeforeToolCallContext],
        Awaitable[BeforeToolCallResult | None] | BeforeToolCallResult | None,
    ],
    context: BeforeToolCallContext,
) -> BeforeToolCallResult | None:
    """``before_tool_call``'s answer for a call, checked (:func:`hook_answer`)."""
    answer = await call_maybe_async(hook, context)
    checked: BeforeToolCallResult | None = hook_answer(
        answer, BeforeToolCallResult, "before_tool_call"
    )
    return checked


async def after_hook(
    hook: Callable[
        [AfterToolCallContext], Awaitable[AfterToolCallResult | None] | AfterToolCallResult | None
    ],
    context: AfterToolCallContext,
) -> tuple[ToolResult, bool, Exception | None]:
    """``after_tool_call`` on a finished call: the result and ``is_error`` it leaves, and the
    exception when the hook raised or gave what a result cannot hold (the result is then its
    error, logged once)."""
    try:
        answer = await call_maybe_async(hook, context)
        override = hook_answer(answer, AfterToolCallResult, "after_tool_call")
        if override is None:
            return context.result, context.is_error, None
        merged = merged_result(context.result, override)
    except Exception as exc:
        text = exception_text(exc)
        log_failure(
            tools_logger, WARNING, exc,
            "after_tool_call raised for tool %s (call %s); the model sees: %s",
            context.tool_call.name, context.tool_call.id, text,
        )  # fmt: skip
        return error_result(text), True, exc
    is_error = context.is_error if override.is_error is None else override.is_error
    return merged, is_error, None
