"""``Recorder``: the seam through which an ``Agent`` tells a durable store what its run did.

The agent calls a recorder synchronously, in event order, at the moment its own state changes:
``record(event)`` after ``agent.state`` has been updated for the event and before any listener or
``events()`` channel sees it, ``queued``/``cleared`` from the queue methods. When ``record``
answers True, the agent awaits ``flush()`` before delivering that event, so whatever the recorder
made durable there is durable before anyone is told about it (state first, then the log, then
delivery). ``pi_trio.sessions`` implements it on SQLite; a test or an application can implement
it too (an audit trail, say).
"""

from __future__ import annotations

import functools
import logging
from typing import Literal, Protocol, TypeAlias, TypeGuard, runtime_checkable

from .._callbacks import exception_line
from .._errors import SessionBusyError
from .._logging import agent_logger, log_failure, mark_logged
from ..events import AgentEvent
from ..messages import AgentMessage

__all__ = ["CheckingRecorder", "QueueKind", "Recorder", "checks_messages", "log_flush_failure"]

QueueKind: TypeAlias = Literal["steer", "follow_up"]


@runtime_checkable
class Recorder(Protocol):
    """What an ``Agent(recorder=...)`` reports, in order, as its state changes.

    Every method but ``flush`` is synchronous and must not block: it notes and returns.
    """

    def record(self, event: AgentEvent) -> bool:
        """Note ``event`` (``agent.state`` is already updated for it).

        Returns:
            True when what was noted must be durable before the event is delivered: the agent
            then awaits :meth:`flush` before any listener or channel sees the event.
        """
        ...

    async def flush(self) -> None:
        """Make everything noted so far durable.

        The agent awaits it before delivering an event ``record`` flagged, before the loop
        drains a queue (a queued message is durable before a run can take it), and once in the
        close-out of every run (shielded, within the agent's ``close_timeout``).

        Raises:
            Exception: ends the run like a failing listener (stop_reason "error" with the
                exception's text); the event that needed it is not delivered.
        """
        ...

    def queued(self, kind: QueueKind, message: AgentMessage) -> None:
        """``message`` is being put in the steering (``"steer"``) or follow-up queue; raising
        (a ``TypeError`` for a message it cannot keep) keeps it out, and ``steer()`` raises.

        When a run drains it, the same message object shows up in ``message_start`` /
        ``message_end`` events.
        """
        ...

    def cleared(self, kind: QueueKind) -> None:
        """That queue was emptied (``clear_*_queue``, ``clear_all_queues``, ``reset``)."""
        ...


@runtime_checkable
class CheckingRecorder(Recorder, Protocol):
    """A :class:`Recorder` that can refuse a message it could not keep (a durable session's
    log, a message type its reader would not know). The agent asks it before a prompt's
    messages go into the transcript (``queued`` is the check of a queued message)."""

    def check_message(self, message: AgentMessage) -> None:
        """Return when ``message`` can be recorded.

        Raises:
            TypeError: it cannot, saying why and what to do.
        """
        ...


def checks_messages(recorder: Recorder) -> TypeGuard[CheckingRecorder]:
    """Whether ``recorder``'s class has :meth:`CheckingRecorder.check_message` (decided once
    per class)."""
    return _checking_class(type(recorder))


@functools.lru_cache(maxsize=64)
def _checking_class(cls: type) -> bool:
    return issubclass(cls, CheckingRecorder)


def log_flush_failure(exc: Exception, message: str, *args: object, again: bool = False) -> None:
    """Log a failed ``Recorder.flush()``. The first failure of a run comes with its traceback
    (a full disk, a store that does not answer); ``again``: the run's flushes failed before,
    so it is one line with the error's first line. A recorder that lost its session
    (:class:`pt.SessionBusyError`) is one DEBUG line: ``open_agent`` raises the loss and a
    worker logs it (one line per lost session), and its traceback would only show the
    cancellation it caused."""
    if isinstance(exc, SessionBusyError):
        agent_logger.debug(message + ": %s", *args, exc, stacklevel=2)
        mark_logged(exc)  # its owner reports it: the run it ends does not log it either
    elif again:
        agent_logger.error(message + ": %s", *args, exception_line(exc), stacklevel=2)
    else:  # marked as logged: the run it ends does not log it again
        log_failure(agent_logger, logging.ERROR, exc, message, *args)
