"""``Phase``: where a run is, which is all its close-out needs to know."""

from __future__ import annotations

import enum

__all__ = ["Phase"]


class Phase(enum.Enum):
    """Where a run stands; set *before* the event that enters the phase is sent."""

    BETWEEN_TURNS = "between turns"
    """No turn is open: before the first ``turn_start``, or after a ``turn_end`` (polling the
    queues, ``should_stop_after_turn``)."""
    STARTING = "starting"
    """A turn is open and its response has not begun streaming (announcing inputs, building
    the request, waiting for the model's first event)."""
    STREAMING = "streaming"
    """The assistant message is streaming (the transcript's open message is the partial)."""
    RUNNING_TOOLS = "running tools"
    """The turn's response asked for tools and its batch is running."""
    ANSWERED = "answered"
    """The turn's response ended and there is nothing to run; ``turn_end`` is next."""
    ENDED = "ended"
    """``agent_end`` has been applied: the run has nothing more to say."""
