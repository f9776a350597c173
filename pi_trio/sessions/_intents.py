"""The ``before_tool_call`` of a durable agent: a tool call's intent is logged, durably,
before the call executes (so a crash during it is known as "outcome_unknown")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._callbacks import call_maybe_async, hook_answer
from ..tools import BeforeToolCall, BeforeToolCallContext, BeforeToolCallResult
from ._recorder import SessionRecorder

__all__ = ["durable_before_tool_call"]


def durable_before_tool_call(
    recorder: SessionRecorder, user_hook: BeforeToolCall | None
) -> Callable[[BeforeToolCallContext], Any]:
    """The ``before_tool_call`` of a durable agent: the application's hook, then the call's
    intent, durable before the loop goes on to ``execute`` (a blocked call logs no intent)."""
    recorder.early_intents = user_hook is None

    async def before_tool_call(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        decision: BeforeToolCallResult | None = None
        if user_hook is not None:
            answer = await call_maybe_async(user_hook, context)
            decision = hook_answer(answer, BeforeToolCallResult, "before_tool_call")
            if decision is not None and decision.block:
                return decision
        if recorder.intend(context.tool_call):
            await recorder.flush()
        return decision

    return before_tool_call
