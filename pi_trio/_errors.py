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
    ├── ProviderNotFoundError (LookupError) unknown wire API, provider or model
    ├── ProviderError                       a model request that failed (a record, not raised)
    ├── OutputError                         a run's structured output failed (a record, not raised)
    ├── EventsOverflowError                 an agent.events() reader fell too far behind
    ├── SessionBusyError (RuntimeError)     a session driven by another holder, or lost by this one
    ├── SessionLogError (ValueError)        a session log or store that pi_trio cannot read
    │   └── SessionStoreError (SessionLogError)   the store failed (unreachable, full)
    ├── SessionNotFoundError (LookupError)  open_agent(id, create=False) of an unknown session
    ├── SessionExistsError (ValueError)     import_pi_session() under an id the store has
    └── PiSessionFileError (ValueError)     import_pi_session(): not a pi 1.6 session file

Failures of a model call or a tool are *not* raised: they become messages in the transcript
(pi's behaviour); these exceptions are for programmer errors and misuse, and for sessions
that cannot be driven or read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

__all__ = [
    "AgentBusyError",
    "ContinueError",
    "EventsOverflowError",
    "OutputError",
    "PiError",
    "PiSessionFileError",
    "ProviderError",
    "ProviderErrorKind",
    "ProviderNotFoundError",
    "SessionBusyError",
    "SessionExistsError",
    "SessionLogError",
    "SessionNotFoundError",
    "SessionStoreError",
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


ProviderErrorKind: TypeAlias = Literal[
    "auth", "rate_limit", "overloaded", "server", "bad_request", "timeout", "connection", "protocol"
]


class ProviderError(PiError):
    """A model request that failed, as a record a program can branch on (pi_trio's addition).

    Built-in providers never raise it: a failed request still ends its stream with pi's error
    assistant message (stop_reason "error", ``error_message`` = ``str(this)``), and this record
    travels beside it on ``StreamError.provider_error``, on the run's ``AgentEnd.error`` and on
    ``agent.state.error``. It is an exception so that it can be that "run's failure" like any
    other, and so an application may raise it itself.

    Attributes (also the keyword arguments):
        message: the error_message (secrets masked).
        kind: what went wrong, to branch on:

            ``auth``         401/403, or no API key (the message names the variable to set)
            ``rate_limit``   429
            ``overloaded``   503, 529, or an "overloaded" error event
            ``server``       other 5xx, or an error event the provider sent in the stream
            ``bad_request``  400, 404 (the message names the URL), 422 ..., a request
                             that could not be built
            ``timeout``      408, a first-byte, idle or overall timeout
            ``connection``   connecting failed, or the connection broke mid-stream
            ``protocol``     not an event stream (an HTML page), invalid JSON, a stream
                             that ended early or that the decoder could not read
        status: the HTTP status, when a response came.
        retryable: whether trying again later could help (the retries allowed by
            ``max_retries`` have been made already).
        retry_after: the wait the server asked for, in seconds, when it said.
        url: the request's URL without query string or credentials.
        code: the provider's own error code or type (``rate_limit_exceeded``,
            ``overloaded_error``, ``RESOURCE_EXHAUSTED`` ...), when it sent one.
        provider: the model's provider (``openai``, ``anthropic`` ...).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ProviderErrorKind,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        url: str | None = None,
        code: str | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ProviderErrorKind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.url = url
        self.code = code
        self.provider = provider

    def fields(self) -> dict[str, object]:
        """The keyword attributes as a dict (for logs, metrics, JSON of the application's)."""
        return {name: getattr(self, name) for name in _PROVIDER_ERROR_FIELDS}

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self.fields().items() if v is not None and v is not False]
        return f"{type(self).__name__}({self.message!r}, {', '.join(shown)})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_provider_error, (type(self), self.message, self.fields()))


_PROVIDER_ERROR_FIELDS = ("kind", "status", "retryable", "retry_after", "url", "code", "provider")


def _rebuild_provider_error(
    cls: type[ProviderError], message: str, fields: dict[str, object]
) -> ProviderError:
    return cls(message, **fields)  # type: ignore[arg-type]


class OutputError(PiError):
    """A run that asked for structured output (``pt.Agent(output_type=...)``) and did not get
    it: the model's attempts failed more often than ``output_retries`` allows. A record, like
    :class:`ProviderError`: the run ends with an assistant message whose stop_reason is
    "error" and whose ``error_message`` is ``str(this)``, and this record is the run's
    ``AgentEnd.error`` and ``agent.state.error``.

    Attributes (also the keyword arguments):
        message: the error_message.
        tool_name: the output tool's name.
        attempts: how many attempts failed.
        last_error: the last attempt's failure: pi's validation error for an invalid call,
            or None when the model answered in text instead of calling the tool.
    """

    def __init__(
        self, message: str, *, tool_name: str, attempts: int, last_error: str | None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.attempts = attempts
        self.last_error = last_error

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_output_error,
            (self.message, self.tool_name, self.attempts, self.last_error),
        )


def _rebuild_output_error(
    message: str, tool_name: str, attempts: int, last_error: str | None
) -> OutputError:
    return OutputError(message, tool_name=tool_name, attempts=attempts, last_error=last_error)


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


class SessionStoreError(SessionLogError):
    """The session store failed, not the log: the database could not be reached again within
    its bound after a dropped connection, a commit's outcome is unknown because the
    connection dropped during it, or the database refused for a reason of its own (a full
    disk, a read-only server, a lock timeout, a missing table). Nothing in the log is wrong, and
    nothing written before is lost: try again once the store is back (a worker leaves the
    session pending for that, where a :class:`SessionLogError` proper parks it).

    A subclass of :class:`SessionLogError`, so code that catches that one catches it too;
    ``problem`` says which failure it was, and the driver's exception is chained.
    """


class PiSessionFileError(PiError, ValueError):
    """A file ``store.import_pi_session`` cannot take as a pi session (pi-coding-agent's JSONL,
    version 3): not a pi session, another version, a line that is not JSON or not an entry, an
    entry whose parent is missing, a message pi_trio cannot read. Nothing was imported.

    ``path`` names the file and ``line`` the line (1-based; None for the whole file).
    """

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class SessionExistsError(PiError, ValueError):
    """``store.import_pi_session`` under an id the store already has (``session_id`` names
    it). Nothing was imported."""

    def __init__(self, message: str, *, session_id: str = "") -> None:
        super().__init__(message)
        self.session_id = session_id


class SessionNotFoundError(PiError, LookupError):
    """``store.open_agent(session_id, create=False)`` of a session the store does not have
    (a mistyped id, say); ``session_id`` names it. Nothing was created."""

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id
