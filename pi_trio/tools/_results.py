"""The tool results the batch makes itself: errors, time-outs, calls a steer stopped."""

from __future__ import annotations

from typing import Any

from ..events import ToolResult
from ..messages import TextContent
from ._agent_tool import AgentTool

__all__ = ["as_tool_result", "error_result", "steered_result", "timed_out_result"]


def error_result(text: str) -> ToolResult:
    """A tool result carrying only an error text (``details`` empty, like pi's)."""
    return ToolResult([TextContent(text)], details={})


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
    """What a tool returned, as a result: a ``ToolResult`` or a text; anything else is a bug
    of the tool (``TypeError``, which becomes its error result)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult([TextContent(value)])
    raise TypeError(f"tool returned {type(value).__name__}, expected pt.ToolResult or str")
