"""The loop configuration of one agent run, built from the agent's settings and queues."""

from __future__ import annotations

import attrs

from ..loop import AgentLoopConfig
from ._budgets import Budgets, Spending
from ._delivery import Delivery
from ._queues import Queues
from ._settings import AgentSettings
from ._state import AgentState

__all__ = ["loop_config"]


def loop_config(
    settings: AgentSettings,
    state: AgentState,
    queues: Queues,
    delivery: Delivery,
    *,
    skip_first_steering_poll: bool,
) -> tuple[AgentLoopConfig, Spending | None]:
    """What an agent's next run is configured with: its settings' hooks, its queues' pollers
    (the first steering poll skipped when ``continue_()`` took its prompt from that queue), its
    budgets, the state's model, and the stream options with ``reasoning`` (from the state's
    thinking level) and ``session_id`` filled in; and the run's :class:`Spending` (None when
    neither it nor an enclosing run counts tokens or cost), to make current while it runs."""
    get_steering, get_follow_ups = queues.pollers(skip_first_steering_poll=skip_first_steering_poll)
    should_stop, finish_turn = settings.should_stop_after_turn, settings.finish_turn
    budgets = Budgets.of(settings)
    spending = None
    if budgets is not None:
        spending = budgets.spending()
        should_stop, finish_turn = budgets.hooks(
            should_stop, finish_turn, state, delivery, queues.any_queued, spending
        )
    options = settings.stream_options
    reasoning = None if state.thinking_level == "off" else state.thinking_level
    session_id = options.session_id or settings.session_id
    if options.reasoning != reasoning or options.session_id != session_id:
        options = attrs.evolve(options, reasoning=reasoning, session_id=session_id)
    config = AgentLoopConfig(
        model=state.model,
        convert_to_llm=settings.convert_to_llm,
        transform_context=settings.transform_context,
        get_api_key=settings.get_api_key,
        should_stop_after_turn=should_stop,
        get_steering_messages=get_steering,
        get_follow_up_messages=get_follow_ups,
        tool_execution=settings.tool_execution,
        before_tool_call=settings.before_tool_call,
        after_tool_call=settings.after_tool_call,
        stream_fn=settings.stream_fn,
        stream_options=options,
        close_timeout=settings.close_timeout,
        max_parallel_tools=settings.max_parallel_tools,
        tool_timeout=settings.tool_timeout,
        steering_policy=settings.steering_policy,
        # only "at_tool_boundary" waits on it: no bound method per run otherwise
        steering_signal=(
            queues.steering.next_put if settings.steering_policy == "at_tool_boundary" else None
        ),
        finish_turn=finish_turn,
        prepare_request=settings.prepare_request,
        prepare_next_turn=settings.prepare_next_turn,
        compaction=settings.compaction,
        output_tool=settings.output_tool,
        output_retries=settings.output_retries,
    )
    return config, spending
