"""``agent.compact()``: a compaction between runs, with the agent's settings and sink."""

from __future__ import annotations

import trio

from ..coding_messages import CompactionSummary
from ..loop import compact_context
from ..tools import AgentContext
from ._delivery import Delivery
from ._loop_config import loop_config
from ._queues import Queues
from ._settings import AgentSettings
from ._state import AgentState

__all__ = ["compact_now"]


async def compact_now(
    settings: AgentSettings,
    state: AgentState,
    delivery: Delivery,
    scope: trio.CancelScope,
    instructions: str | None,
) -> CompactionSummary | None:
    """Compact ``state.messages`` in place inside ``scope`` (which ``abort()`` cancels: then
    None, the transcript unchanged); the events go to the agent's subscribers and recorder.
    A caller's cancellation propagates, the transcript unchanged."""
    config, _ = loop_config(
        settings,
        state,
        Queues(delivery),
        delivery,
        skip_first_steering_poll=False,
    )
    context = AgentContext(state.system_prompt, state.messages, list(state.tools))
    delivery.begin_run()
    state.begin_compaction()
    with scope:
        return await compact_context(context, config, delivery, instructions=instructions)
    return None
