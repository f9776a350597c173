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
from ._results import error_result
from ._validation import ArgumentValidator, json_schema_for

__all__ = [
    "ABORTED_TOOL_TEXT",
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
    "ToolBatch",
    "ToolDecision",
    "ToolExecute",
    "ToolExecutionMode",
    "denied_result",
    "error_result",
    "exception_text",
    "json_schema_for",
    "tool",
]
