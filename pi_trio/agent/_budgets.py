"""Run budgets (pi_trio's addition): ``max_turns``, ``max_tool_calls``, ``max_total_tokens``,
``max_cost`` on the ``Agent``.

Counted per run, checked after each turn (never mid-tool: the turn's batch has finished), the
same way as ``should_stop_after_turn``: when a budget is reached the run ends after that turn,
``state.error_message`` says which budget and how much was used (set before ``agent_end`` is
delivered), and the ``events()`` channels get a :class:`pt.BudgetReached` notice. The
transcript stays pi's: the run simply ends after a complete turn.

Tokens and cost include what the turn's tools report they spent (``ToolResult(usage=...)``, a
sub-agent's total). A run nested in a tool of another run (a sub-agent) is bounded by the
enclosing runs' remaining ``max_total_tokens``/``max_cost`` too: each run's :class:`Spending`
is the current one (a context variable, so the tool batch's tasks see it) while it runs; a
nested run charges its model usage to every enclosing run as its turns end, so that two
sub-agents running side by side draw on the same remainder, and it ends after the turn that
exhausts an enclosing budget, as it would after its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import attrs

from .._callbacks import call_maybe_async
from ..events import BudgetReached
from ..loop import FinishTurn, FinishTurnDecision, ShouldStopAfterTurn, ShouldStopAfterTurnContext
from ..messages import AssistantMessage, Usage
from ._delivery import Delivery
from ._settings import AgentSettings
from ._state import AgentState

__all__ = ["Budgets", "Spending", "spending_during"]


@attrs.define(eq=False)
class Spending:
    """The tokens and cost one run has spent (its settled turns) and what runs nested in its
    tools have spent during its current turn, against its own limits; ``outer`` is the run
    whose tool this run is nested in. A run that has ``ended`` bounds nothing: a task its tool
    started in a nursery outside it (copying the context variable) may run agents after it."""

    max_total_tokens: int | None
    max_cost: float | None
    outer: Spending | None
    tokens: int = 0
    cost: float = 0.0
    nested_tokens: int = 0
    nested_cost: float = 0.0
    ended: bool = False

    def settle_turn(self, own: Usage, tools: list[Usage]) -> None:
        """A turn ended: its model usage and what its tools reported join the run's total
        (that replaces the nested runs' running charges); the model usage is charged to every
        enclosing run."""
        self.tokens += own.total_tokens + sum(usage.total_tokens for usage in tools)
        self.cost += own.cost.total + sum(usage.cost.total for usage in tools)
        self.nested_tokens, self.nested_cost = 0, 0.0
        outer = self.outer
        while outer is not None:
            if not outer.ended:
                outer.nested_tokens += own.total_tokens
                outer.nested_cost += own.cost.total
            outer = outer.outer

    def outer_limit_reached(self) -> BudgetReached | None:
        """The first enclosing run whose token or cost budget is used up, as a notice."""
        outer = self.outer
        while outer is not None:
            if outer.ended:
                outer = outer.outer
                continue
            for budget, limit, value in (
                ("max_total_tokens", outer.max_total_tokens, outer.tokens + outer.nested_tokens),
                ("max_cost", outer.max_cost, outer.cost + outer.nested_cost),
            ):
                if limit is not None and value >= limit:
                    return BudgetReached(budget, limit, value)
            outer = outer.outer
        return None


_CURRENT: ContextVar[Spending | None] = ContextVar("pi_trio_spending", default=None)


def _current() -> Spending | None:
    """The innermost run still going whose tool this task is in (None outside any)."""
    spending = _CURRENT.get()
    while spending is not None and spending.ended:
        spending = spending.outer
    return spending


@contextmanager
def spending_during(spending: Spending | None) -> Iterator[None]:
    """Make ``spending`` the current run's while the block runs (nothing for None); it has
    ended when the block has."""
    if spending is None:
        yield
        return
    token = _CURRENT.set(spending)
    try:
        yield
    finally:
        spending.ended = True
        _CURRENT.reset(token)


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
        """The budgets ``settings`` set (with those of enclosing runs, for a nested run), or
        None when there are none."""
        limits = (
            settings.max_turns,
            settings.max_tool_calls,
            settings.max_total_tokens,
            settings.max_cost,
        )
        if all(limit is None for limit in limits) and _current() is None:
            return None
        return cls(*limits)

    def spending(self) -> Spending | None:
        """A new run's :class:`Spending`, when it or an enclosing run counts tokens or cost;
        read in the task that runs it (the enclosing run's is the current one there)."""
        outer = _current()
        if outer is None and self.max_total_tokens is None and self.max_cost is None:
            return None
        return Spending(self.max_total_tokens, self.max_cost, outer)

    def hooks(
        self,
        user_hook: ShouldStopAfterTurn | None,
        finish_turn: FinishTurn | None,
        state: AgentState,
        delivery: Delivery,
        has_queued_messages: Callable[[], bool],
        spending: Spending | None = None,
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

        guard = self.guard(user_hook, reached, would_continue, state, spending)
        return guard, guarded_finish

    def guard(
        self,
        user_hook: ShouldStopAfterTurn | None,
        reached: Callable[[BudgetReached], None],
        would_continue: Callable[[ShouldStopAfterTurnContext], bool],
        state: AgentState | None = None,
        spending: Spending | None = None,
    ) -> ShouldStopAfterTurn:
        """A ``should_stop_after_turn`` for one run: the user's hook first, then the budgets
        (counted from this run's turns and what their tools reported spending, plus the
        compaction summaries ``state`` counted), then those of enclosing runs (``spending``'s
        outer ones); ``reached`` is told the budget that ended it. A turn after which the run
        ends anyway (``would_continue`` false) is not reported."""
        used = {"turns": 0, "tool_calls": 0}
        spent = spending if spending is not None else Spending(None, None, None)

        async def should_stop(ctx: ShouldStopAfterTurnContext) -> bool:
            used["turns"] += 1
            used["tool_calls"] += len(ctx.tool_results)
            message = ctx.message
            own = message.usage if isinstance(message, AssistantMessage) else _NOTHING
            spent.settle_turn(own, [r.usage for r in ctx.tool_results if r.usage is not None])
            if user_hook is not None and await call_maybe_async(user_hook, ctx):
                return True
            if not would_continue(ctx):
                return False
            summary_tokens, summary_cost = (0, 0.0) if state is None else state.compaction_usage
            for budget, limit, value in (
                ("max_turns", self.max_turns, used["turns"]),
                ("max_tool_calls", self.max_tool_calls, used["tool_calls"]),
                ("max_total_tokens", self.max_total_tokens, spent.tokens + summary_tokens),
                ("max_cost", self.max_cost, spent.cost + summary_cost),
            ):
                if limit is not None and value >= limit:
                    reached(BudgetReached(budget, limit, value))
                    return True
            outer = spent.outer_limit_reached()
            if outer is not None:
                reached(outer)
                return True
            return False

        return should_stop


_NOTHING = Usage()


def budget_text(notice: BudgetReached) -> str:
    """``state.error_message`` for a run a budget ended."""
    used: Any = notice.used
    shown = f"{used:.4g}" if isinstance(used, float) else str(used)
    return (
        f"Run stopped: budget {notice.budget}={notice.limit:g} reached ({shown} used); "
        "prompt() or continue_() to go on"
    )
