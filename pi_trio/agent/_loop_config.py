"""The loop configuration of one agent run, built from the agent's settings and queues."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import trio

from ..loop import AgentLoopConfig

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["check_settings", "loop_config"]


def check_settings(agent: Agent) -> None:
    """Refuse at once what a run's configuration would refuse (``Agent()`` raises, not its
    first ``prompt()``).

    Raises:
        ValueError: ``max_parallel_tools``, ``tool_timeout`` or ``steering_policy`` out of
            range.
    """
    AgentLoopConfig(
        agent.state.model,
        max_parallel_tools=agent.max_parallel_tools,
        tool_timeout=agent.tool_timeout,
        steering_policy=agent.steering_policy,
        steering_signal=trio.Event,
    )


def loop_config(agent: Agent, skip_initial_steering_poll: bool) -> AgentLoopConfig:
    """What ``agent``'s next run is configured with: its hooks, its queues' pollers (the first
    steering poll skipped when ``continue_()`` took its prompt from that queue), its budgets,
    and the stream options with ``reasoning`` and ``session_id`` filled in."""
    state = agent.state
    queues = agent._queues
    get_steering, get_follow_ups = queues.pollers(
        skip_first_steering_poll=skip_initial_steering_poll
    )
    should_stop, finish_turn = agent.budgets.hooks(
        agent.should_stop_after_turn,
        agent.finish_turn,
        state,
        agent._delivery,
        agent.has_queued_messages,
    )
    options = agent.stream_options
    reasoning = None if state.thinking_level == "off" else state.thinking_level
    if options.reasoning != reasoning or (agent.session_id and not options.session_id):
        options = attrs.evolve(
            options, reasoning=reasoning, session_id=options.session_id or agent.session_id
        )
    return AgentLoopConfig(
        model=state.model,
        convert_to_llm=agent.convert_to_llm,
        transform_context=agent.transform_context,
        get_api_key=agent.get_api_key,
        should_stop_after_turn=should_stop,
        get_steering_messages=get_steering,
        get_follow_up_messages=get_follow_ups,
        tool_execution=agent.tool_execution,
        before_tool_call=agent.before_tool_call,
        after_tool_call=agent.after_tool_call,
        stream_fn=agent.stream_fn,
        stream_options=options,
        close_timeout=agent.close_timeout,
        max_parallel_tools=agent.max_parallel_tools,
        tool_timeout=agent.tool_timeout,
        steering_policy=agent.steering_policy,
        # only "at_tool_boundary" waits on it: no bound method per run otherwise
        steering_signal=(
            queues.steering.next_put if agent.steering_policy == "at_tool_boundary" else None
        ),
        finish_turn=finish_turn,
        prepare_request=agent.prepare_request,
        prepare_next_turn=agent.prepare_next_turn,
    )
