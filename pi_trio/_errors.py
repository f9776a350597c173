"""The one exception hierarchy of pi_trio.

Everything pi_trio raises on purpose derives from :class:`PiError`, so callers can catch the
library's errors without catching their own bugs. Each also derives from the built-in exception
that fits (``ValueError``, ``RuntimeError``, ``LookupError``), so ``except ValueError`` code keeps
working. The classes are not final: an application may derive its own errors from them::

    PiError
    ├── WireFormatError (ValueError)        pt.from_json: data that does not fit pi's format
    ├── AgentBusyError (RuntimeError)       prompt()/continue_()/reset() during a run
    ├── ContinueError (ValueError)          continue_(), run_agent_loop_continue(): nothing to do
    ├── ToolArgumentError (ValueError)      a tool call's arguments did not validate
    └── ProviderNotFoundError (LookupError) unknown wire API, provider or model

Failures of a model call or a tool are *not* raised: they become messages in the transcript
(pi's behaviour); these exceptions are for programmer errors and misuse.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AgentBusyError",
    "ContinueError",
    "EventsOverflowError",
    "PiError",
    "ProviderNotFoundError",
    "SessionBusyError",
    "SessionLogError",
    "ToolArgumentError",
    "WireFormatError",
]


class PiError(Exception):
    """Root of every exception pi_trio raises deliberately."""


class WireFormatError(PiError, ValueError):
    """JSON that does not match pi's wire format.

    The message starts with the path of the offending value (``content[2].type: ...``).
    ``errors`` holds every problem found, each with its path.

    Args:
        message: the whole explanation (every problem, ``; ``-separated).
        errors: each problem as ``path: what is wrong``; defaults to ``(message,)``.
    """

    def __init__(self, message: str, errors: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.errors = errors or (message,)


class AgentBusyError(PiError, RuntimeError):
    """``prompt()``, ``continue_()`` or ``reset()`` was called while the agent is running."""


class ContinueError(PiError, ValueError):
    """``continue`` was asked of a transcript it cannot continue (empty, or ending in an
    assistant message with nothing queued)."""


class ToolArgumentError(PiError, ValueError):
    """A tool call's arguments did not validate; ``str(exc)`` is pi's exact error text.

    The loop turns it into the error tool result the model sees. ``problems`` holds the
    ``path: message`` lines, ``tool_name`` the tool.

    Args:
        message: pi's error text, as the model will see it.
        tool_name: the tool whose arguments failed.
        problems: the ``path: message`` lines.
    """

    def __init__(self, message: str, *, tool_name: str = "", problems: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.problems = tuple(problems)


class ProviderNotFoundError(PiError, LookupError):
    """No stream function is registered for a model's ``api``, or the model is unknown."""


class EventsOverflowError(PiError):
    """An ``agent.events()`` reader fell so far behind that its subscription was dropped.

    Raised by the reader's ``receive()`` (and so out of ``async for``) once it has read every
    event queued before the drop. Read faster, raise ``max_backlog``, or subscribe with
    ``on_overflow="block"`` to make the run wait for the reader instead.
    """


class SessionBusyError(PiError, RuntimeError):
    """A session is driven by another holder (this process or another one), or this holder
    lost it (its lease epoch is no longer the session's).

    ``session_id`` names the session; ``holder`` describes the other holder when known.
    """

    def __init__(self, message: str, *, session_id: str = "", holder: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.holder = holder


class SessionLogError(PiError, ValueError):
    """A session log (or store) that pi_trio cannot read: an entry that is corrupt (bad JSON,
    not pi's wire format), of an unknown kind or of a newer format version, or a store file
    that is not a pi_trio store. Nothing is overwritten or dropped.

    ``session_id`` and ``seq`` locate the entry (empty / None for a store-level problem);
    ``problem`` says what is wrong with it.
    """

    def __init__(
        self, message: str, *, session_id: str = "", seq: int | None = None, problem: str = ""
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.seq = seq
        self.problem = problem or message
