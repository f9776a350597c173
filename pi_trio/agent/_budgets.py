"""Run budgets (pi_trio's addition): ``max_turns``, ``max_tool_calls``, ``max_total_tokens``,
``max_cost`` on the ``Agent``.

Counted per run, checked after each turn (never mid-tool: the turn's batch has finished), the
same way as ``should_stop_after_turn``: when a budget is reached the run ends after that turn,
``state.error_message`` says which budget and how much was used (set before ``agent_end`` is
delivered), and the ``events()`` channels get a :class:`pt.BudgetReached` notice. The
transcript stays pi's: the run simply ends after a complete turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from .._callbacks import call_maybe_async
from ..events import BudgetReached
from ..loop import FinishTurn, FinishTurnDecision, ShouldStopAfterTurn, ShouldStopAfterTurnContext
from ..messages import AssistantMessage
from ._delivery import Delivery
from ._settings import AgentSettings
from ._state import AgentState

__all__ = ["Budgets"]


@attrs.frozen
class Budgets:
    """The limits of one agent's runs (None: no limit), as its settings hold them (checked
    there)."""

    max_turns: int | None
    max_tool_calls: int | None
    max_total_tokens: int | None
    max_cost: float | None

    @classmethod
    def of(cls, settings: AgentSettings) -> Budgets | None:
        """The budgets ``settings`` set, or None when they set none."""
        limits = (
            settings.max_turns,
            settings.max_tool_calls,
            settings.max_total_tokens,
            settings.max_cost,
        )
        if all(limit is None for limit in limits):
            return None
        return cls(*limits)

    def hooks(
        self,
        user_hook: ShouldStopAfterTurn | None,
        finish_turn: FinishTurn | None,
        state: AgentState,
        delivery: Delivery,
        has_queued_messages: Callable[[], bool],
    ) -> tuple[ShouldStopAfterTurn | None, FinishTurn | None]:
        """The agent's ``should_stop_after_turn`` and ``finish_turn`` for one run: the user's
        hooks, with the budgets checked after each turn when any is set (the reason goes to
        ``state.error_message`` before ``agent_end``, the notice to the ``events()``
        channels). A turn counts as going on when it ran tools, something is queued, or
        ``finish_turn`` asked to continue."""
        decided: list[FinishTurnDecision] = [None]

        def reached(notice: BudgetReached) -> None:
            state.error_message = budget_text(notice)
            delivery.offer(notice)

        def would_continue(ctx: ShouldStopAfterTurnContext) -> bool:
            return bool(ctx.tool_results) or decided[0] == "continue" or has_queued_messages()

        guarded_finish: FinishTurn | None = None
        if finish_turn is not None:
            user_finish = finish_turn

            async def guarded_finish(turn: ShouldStopAfterTurnContext) -> FinishTurnDecision:
                decided[0] = await call_maybe_async(user_finish, turn)
                return decided[0]

        return self.guard(user_hook, reached, would_continue, state), guarded_finish

    def guard(
        self,
        user_hook: ShouldStopAfterTurn | None,
        reached: Callable[[BudgetReached], None],
        would_continue: Callable[[ShouldStopAfterTurnContext], bool],
        state: AgentState | None = None,
    ) -> ShouldStopAfterTurn:
        """A ``should_stop_after_turn`` for one run: the user's hook first, then the budgets
        (counted from this run's turns, plus the compaction summaries ``state`` counted);
        ``reached`` is told the budget that ended it. A turn after which the run ends anyway
        (``would_continue`` false) is not reported."""
        used = {"turns": 0, "tool_calls": 0, "tokens": 0, "cost": 0.0}

        async def should_stop(ctx: ShouldStopAfterTurnContext) -> bool:
            used["turns"] += 1
            used["tool_calls"] += len(ctx.tool_results)
            message = ctx.message
            if isinstance(message, AssistantMessage):
                used["tokens"] += message.usage.total_tokens
                used["cost"] += message.usage.cost.total
            if user_hook is not None and await call_maybe_async(user_hook, ctx):
                return True
            if not would_continue(ctx):
                return False
            summary_tokens, summary_cost = (0, 0.0) if state is None else state.compaction_usage
            for budget, limit, value in (
                ("max_turns", self.max_turns, used["turns"]),
                ("max_tool_calls", self.max_tool_calls, used["tool_calls"]),
                ("max_total_tokens", self.max_total_tokens, used["tokens"] + summary_tokens),
                ("max_cost", self.max_cost, used["cost"] + summary_cost),
            ):
                if limit is not None and value >= limit:
                    reached(BudgetReached(budget, limit, value))
                    return True
            return False

        return should_stop


def budget_text(notice: BudgetReached) -> str:
    """``state.error_message`` for a run a budget ended."""
    used: Any = notice.used
    shown = f"{used:.4g}" if isinstance(used, float) else str(used)
    return (
        f"Run stopped: budget {notice.budget}={notice.limit:g} reached ({shown} used); "
        "prompt() or continue_() to go on"
    )
