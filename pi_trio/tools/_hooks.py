"""The records the loop hands to hooks, and the ones hooks hand back (names follow pi)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, final

import attrs

from ..events import ToolResult
from ..messages import AgentMessage, AssistantMessage, ToolCall, ToolResultContent, Usage

if TYPE_CHECKING:
    from ._agent_tool import AgentTool

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentContext",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
]


@final
@attrs.define
class AgentContext:
    """A run's transcript, system prompt and tools.

    The loop appends to ``messages`` as the run goes (state first, then events), so after a
    run, or after a cancelled one, ``messages`` is the complete, valid transcript.
    """

    system_prompt: str = ""
    messages: list[AgentMessage] = attrs.field(factory=list)
    tools: Sequence[AgentTool] = ()


@final
@attrs.frozen
class BeforeToolCallContext:
    """Given to ``before_tool_call`` after the arguments validated, before execution."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    context: AgentContext


@final
@attrs.frozen
class BeforeToolCallResult:
    """``block=True`` stops the call; the model gets ``reason`` as an error result.

    ``terminate=True`` (pi 1.x) marks a blocked call's result as asking the run to stop after
    the batch (it stops when every result of the batch asks, as for tools).
    """

    block: bool = False
    reason: str | None = None
    terminate: bool = False


@final
@attrs.frozen
class AfterToolCallContext:
    """Given to ``after_tool_call`` once a tool has run (or failed)."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    result: ToolResult
    is_error: bool
    context: AgentContext


@final
@attrs.frozen
class AfterToolCallResult:
    """Field-by-field overrides of a tool's result; ``None`` keeps the tool's value.

    ``structured_content`` and ``usage`` as pi 1.6's: new ``content`` without new
    ``structured_content`` drops the tool's structured content (it may no longer match).
    """

    content: list[ToolResultContent] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None
    structured_content: Any = None
    usage: Usage | None = None
