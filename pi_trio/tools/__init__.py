"""Tools: ``AgentTool``, argument validation, ``@tool``, and the tool batch the loop runs."""

from __future__ import annotations

from ._agent_tool import AgentTool, OnUpdate, ToolExecute, ToolExecutionMode
from ._approval import ApprovalPolicy, ToolDecision, denied_result
from ._batch import (
    ABORTED_TOOL_TEXT,
    AfterToolCall,
    Announce,
    BeforeToolCall,
    Emit,
    ToolBatch,
    exception_text,
)
from ._decorator import tool
from ._hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from ._output import OUTPUT_KEY, OutputType, has_output, last_output, output_json, output_tool
from ._results import as_tool_result, error_result
from ._threads import DEFAULT_TOOL_THREADS, tool_thread_limiter
from ._validation import ArgumentValidator, json_schema_for

__all__ = [
    "ABORTED_TOOL_TEXT",
    "DEFAULT_TOOL_THREADS",
    "OUTPUT_KEY",
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentContext",
    "AgentTool",
    "Announce",
    "ApprovalPolicy",
    "ArgumentValidator",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "Emit",
    "OnUpdate",
    "OutputType",
    "ToolBatch",
    "ToolDecision",
    "ToolExecute",
    "ToolExecutionMode",
    "as_tool_result",
    "denied_result",
    "error_result",
    "exception_text",
    "has_output",
    "json_schema_for",
    "last_output",
    "output_json",
    "output_tool",
    "tool",
    "tool_thread_limiter",
]
