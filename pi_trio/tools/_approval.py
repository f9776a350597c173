"""Approvals: a tool call that waits for a person's decision before it runs.

A tool with ``requires_approval`` (True, or a policy called with the validated call) does not
run when the model calls it: the batch sends a :class:`pt.ToolApprovalRequest`, runs the rest
of its calls, and the run ends with the call waiting. The application decides
(``agent.approve``/``agent.deny``, or a durable store's, from any process); the next
``continue_()`` runs the batch again for the waiting calls with those decisions: an approved
call runs as any other (``before_tool_call``, execute, ``after_tool_call``), a denied one gets
an error result saying so and why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias, final

import attrs

from .._callbacks import call_maybe_async
from .._checks import describe
from ..events import ToolResult
from ..messages import TextContent
from ._hooks import BeforeToolCallContext

if TYPE_CHECKING:
    from ._agent_tool import AgentTool

__all__ = [
    "ApprovalPolicy",
    "ToolDecision",
    "denied_result",
    "needs_approval",
]

ApprovalPolicy: TypeAlias = Callable[[BeforeToolCallContext], bool | Awaitable[bool]]
"""Whether one call needs a person's approval, given the call with its validated arguments
(a refund over 100 EUR does, one below does not)."""


@final
@attrs.frozen
class ToolDecision:
    """A person's decision about a waiting tool call: ``approved``, and why (a denial's
    ``reason`` reaches the model in the call's error result)."""

    approved: bool
    reason: str = ""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.approved, bool):
            raise TypeError(f"ToolDecision.approved must be a bool, got {describe(self.approved)}")
        if not isinstance(self.reason, str):
            raise TypeError(f"ToolDecision.reason must be a str, got {describe(self.reason)}")


async def needs_approval(tool: AgentTool, context: BeforeToolCallContext) -> bool:
    """Whether this call of ``tool`` waits for a decision (its policy asked, when callable).

    Raises:
        TypeError: the policy returned something that is not a bool.
        Exception: what the policy raised (the call then gets it as its error result).
    """
    policy = tool.requires_approval
    if policy is False or policy is True:
        return policy
    answer = await call_maybe_async(policy, context)
    if not isinstance(answer, bool):
        raise TypeError(
            f"requires_approval of tool {tool.name!r} must return a bool, got {describe(answer)}"
        )
    return answer


def denied_result(tool_name: str, reason: str) -> ToolResult:
    """The error result of a call a person denied (the model reads why)."""
    text = f"Tool call {tool_name} was denied by the user"
    text += f": {reason}" if reason else "."
    return ToolResult(
        [TextContent(text)], details={"denied": True, "reason": reason}, is_error=True
    )
