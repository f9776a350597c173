"""Where a run stands, with what its close-out needs to finish it from there.

A run is always in exactly one phase, a record the run replaces and never changes. It enters
each one before it sends the event that begins it (``turn_start`` for :data:`REQUESTING`, the
response's ``message_end`` for :class:`RunningTools` or :class:`Answered`, ``turn_end`` for
:class:`BetweenTurns`, ``agent_end`` for :data:`ENDED`), so wherever a cancellation lands, the
phase and the transcript together say which events pi's aborted shape still needs.
"""

from __future__ import annotations

from typing import TypeAlias, final

import attrs

from ..messages import AssistantMessage, ToolResultMessage
from ..tools import ToolBatch

__all__ = [
    "AWAITING",
    "BETWEEN_TURNS",
    "ENDED",
    "ENDING",
    "REQUESTING",
    "STREAMING",
    "Answered",
    "BetweenTurns",
    "Ended",
    "Phase",
    "Requesting",
    "RunningTools",
    "Streaming",
]


@final
@attrs.frozen
class BetweenTurns:
    """No turn is open: before the first ``turn_start``, or after a ``turn_end`` (polling the
    queues, the stop hooks). ``ending``: that turn's response asked for nothing more to run,
    so without new messages the run ends; ``awaiting``: tool calls of that turn wait for a
    person's decision, so the run ends (queued messages stay queued)."""

    ending: bool
    awaiting: bool = False


@final
@attrs.frozen
class Requesting:
    """A turn is open: its messages are being announced and its request built."""


@final
@attrs.frozen
class Streaming:
    """The request went out; the transcript's open message, if any, is the streaming
    partial."""


@final
@attrs.define  # not frozen: a frozen record's __init__ costs 2.5x (one per turn)
class RunningTools:
    """The response asked for tools and ``batch`` runs them."""

    batch: ToolBatch


@final
@attrs.define  # as RunningTools
class Answered:
    """The turn's response (and its batch, if any) is done; ``turn_end`` is next.
    ``ending``, ``awaiting``: as in :class:`BetweenTurns`."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    ending: bool
    awaiting: bool = False


@final
@attrs.frozen
class Ended:
    """``agent_end`` has been applied: the run has nothing more to say."""


Phase: TypeAlias = BetweenTurns | Requesting | Streaming | RunningTools | Answered | Ended

BETWEEN_TURNS = BetweenTurns(ending=False)
ENDING = BetweenTurns(ending=True)
AWAITING = BetweenTurns(ending=True, awaiting=True)
REQUESTING = Requesting()
STREAMING = Streaming()
ENDED = Ended()
