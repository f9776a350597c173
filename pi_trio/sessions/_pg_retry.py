"""A PostgreSQL connection that dropped: which requests run again on a new one, and how.

The server or the network may end a connection at any time (``pg_terminate_backend``, a
failover, a restart, a proxy's idle timeout). The request that finds it dead is run again on a
new connection when running it twice cannot do anything twice:

- reads (``inbox``, ``has_session``, ``load_rows``, ``list_sessions``), ``renew`` and
  ``release`` (conditional on the lease: a second run finds what the first did);
- ``acquire``: its holder token is new for every open, so a retry that finds the session held
  by that token knows its own first attempt took it, and takes it again;
- ``claim``: a claim committed just before the drop leaves its leases unknown to the worker;
  they expire (``lease_ttl``) and the sessions, still pending, are claimed again;
- ``append``: each request is one transaction, so before running again the first row of each
  is looked up; a request whose row is in the log under its lease's epoch was committed, and is
  done (see :func:`committed_appends`);
- ``enqueue`` and ``delete``: only when the drop is noticed before their COMMIT. One noticed
  at the COMMIT leaves their outcome unknown (even a connection the server ended while it
  sat idle is only heard of in the COMMIT's answer), and the caller is told so.

Retries go on for ``reconnect_for`` seconds from the outage's first failure (see
:class:`Retrying`), with back-off; past that, or for a request that cannot run twice, the
caller gets a :class:`pt.SessionStoreError` naming the session and the cause. Anything else
the server says is not a dropped connection and is not retried: a request's own rows refused
(``IntegrityError``, ``DataError``) is a :class:`pt.SessionLogError`, and the store failing
otherwise (a full disk, a read-only server, a lock timeout, a missing table) a
``SessionStoreError``, which leaves a worker's session pending.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import outcome

from .._callbacks import exception_line
from .._errors import SessionLogError, SessionStoreError
from .._logging import sessions_logger
from ._backend import Lease
from ._pg_schema import scrub
from ._writer import Request

__all__ = ["RETRIED", "CommitUnknown", "Retrying", "committed_appends", "transaction"]

RETRIED = frozenset(
    {
        "inbox",
        "has_session",
        "load_rows",
        "list_sessions",
        "renew",
        "release",
        "acquire",
        "claim",
        "append",
    }
)
"""The operations run again after a drop whenever it happens (``enqueue`` and ``delete``
only when their COMMIT had not gone out)."""


class CommitUnknown(Exception):
    """The connection dropped while a COMMIT was on its way: done or not, nobody can say."""


@contextlib.contextmanager
def transaction(conn: Any, psycopg: Any) -> Iterator[None]:
    """``conn.transaction()``, with a drop during its COMMIT raised as :class:`CommitUnknown`
    (a drop before it means nothing was committed)."""
    committing = False
    try:
        with conn.transaction():
            yield
            committing = True
    except psycopg.OperationalError as exc:
        if committing and (conn.broken or conn.closed):
            raise CommitUnknown(str(exc)) from exc
        raise


def dropped(conn: Any, exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (or could not be made again), rather than
    the server refusing the request itself."""
    if isinstance(exc, CommitUnknown):
        return True
    if isinstance(exc, SessionLogError) and exc.problem == "cannot connect":
        return True
    return conn is not None and bool(conn.broken or conn.closed)


def request_session(request: Any) -> str:
    """The session a request is about ("" for store-wide ones: ``list_sessions``, ``claim``)."""
    if not request.args:
        return ""
    first = request.args[0]
    if isinstance(first, str):
        return first
    return first.session_id if isinstance(first, Lease) else ""


def committed_appends(conn: Any, group: Sequence[Any]) -> set[int]:
    """The indexes in ``group`` (append requests: lease, rows, inbox) whose rows are already in
    the log under their lease's epoch: committed before the connection dropped."""
    wanted = [(i, r.args[0], r.args[1][0][0]) for i, r in enumerate(group) if r.args[1]]
    if not wanted:
        return set()
    found = {
        (sid, seq)
        for sid, seq in conn.execute(
            "SELECT e.session_id, e.seq FROM pi_trio_entries e JOIN unnest(%s::text[], "
            "%s::bigint[], %s::bigint[]) AS w(s, q, p) ON e.session_id = w.s AND e.seq = w.q "
            "AND e.epoch = w.p",
            (
                [lease.session_id for _, lease, _ in wanted],
                [seq for _, _, seq in wanted],
                [lease.epoch for _, lease, _ in wanted],
            ),
        )
    }
    return {i for i, lease, seq in wanted if (lease.session_id, seq) in found}


def unreachable(
    description: str, session_id: str, op: str, cause: str, *, bound: float
) -> SessionStoreError:
    """The error for a request given up on: the database stayed away past ``bound`` seconds."""
    where = f"session {session_id!r}: " if session_id else ""
    return SessionStoreError(
        f"{where}the connection to the session store {description} was lost and it could not "
        f"be reached again within {bound:g} s ({op}; {cause})",
        session_id=session_id,
        problem="connection lost",
    )


def unknown_commit(description: str, session_id: str, op: str, cause: str) -> SessionStoreError:
    """The error for an ``enqueue``/``delete`` whose COMMIT was cut: it may have happened."""
    where = f"session {session_id!r}: " if session_id else ""
    what = "the message may or may not be in the inbox" if op == "enqueue" else "it may be gone"
    return SessionStoreError(
        f"{where}the connection to the session store {description} was lost while its {op} "
        f"was committing; {what} ({cause})",
        session_id=session_id,
        problem="commit outcome unknown",
    )


class Retrying:
    """Runs one connection's requests in its thread, replacing the connection when it drops
    and running them again where that is safe (see the module doc).

    The bound is per outage, not per request: the first drop starts it (and is the one line
    logged), every request queued behind waits within the same ``reconnect_for``, and once it
    has passed each request tries one new connection and fails at once if there is none. A
    request that goes through ends the outage.
    """

    def __init__(self, description: str, url: str, psycopg: Any, reconnect_for: float) -> None:
        self.description = description
        self.reconnect_for = reconnect_for
        self._url = url
        self._psycopg = psycopg
        self._outage_until: float | None = None  # monotonic time its retries give up

    def run(
        self,
        connect: Callable[[], Any],
        group: list[Request],
        run: Callable[[Any, list[Request]], None],
    ) -> None:
        """``run(connect(), group)``; every request of ``group`` ends with its result set."""
        retried = False
        confirmed: set[int] = set()  # appends found committed by an earlier attempt
        delay = 0.05
        while True:
            conn = None
            try:
                conn = connect()
                if retried and group[0].op == "append":
                    confirmed |= committed_appends(conn, group)
                    for done in confirmed:
                        group[done].result = outcome.Value(None)
                run(conn, [request for request in group if request.result is None])
                self._outage_until = None
                return
            except (self._psycopg.Error, CommitUnknown, SessionLogError) as exc:
                cause = scrub(exception_line(exc), self._url).strip()
                for index, request in enumerate(group):  # what the failed attempt set is void
                    if index not in confirmed:
                        request.result = None
                if not self._again(conn, group[0], exc):
                    if conn is not None and not (conn.broken or conn.closed):
                        self._outage_until = None  # the server answered: no outage
                    refused = self._refused(group[0], exc, cause)
                    if refused is not exc:
                        refused.__cause__ = self._chained(exc)
                    _fail(group, refused)
                    return
                now = time.monotonic()
                deadline = self._outage_until
                if deadline is None:
                    deadline = self._outage_until = now + self.reconnect_for
                    sessions_logger.warning(
                        "session store %s: the database connection was lost during %s (%s); "
                        "reconnecting, for up to %g s",
                        self.description,
                        _what(group),
                        cause,
                        self.reconnect_for,
                    )
                if now >= deadline:
                    error = unreachable(
                        self.description,
                        request_session(group[0]),
                        group[0].op,
                        cause,
                        bound=self.reconnect_for,
                    )
                    error.__cause__ = self._chained(exc)
                    _fail(group, error)
                    return
                retried = True
                time.sleep(min(delay, deadline - now))
                delay = min(delay * 2, 1.0)
            except BaseException as exc:
                _fail(group, exc)
                return

    def _chained(self, exc: BaseException) -> BaseException | None:
        """``exc`` as the cause of the caller's error, unless its text holds the password."""
        text = str(exc)
        return exc if scrub(text, self._url) == text else None

    @staticmethod
    def _again(conn: Any, request: Request, exc: BaseException) -> bool:
        if not dropped(conn, exc):
            return False
        return request.op in RETRIED or not isinstance(exc, CommitUnknown)

    def _refused(self, request: Request, exc: BaseException, cause: str) -> BaseException:
        """What the caller of a request that is not run again gets."""
        if isinstance(exc, CommitUnknown):
            return unknown_commit(self.description, request_session(request), request.op, cause)
        if isinstance(exc, SessionLogError):
            return exc
        text = f"session store {self.description}: {cause}"
        return self._classified(exc, request_session(request), text)

    def refusal(self, request: Request, exc: BaseException) -> SessionLogError:
        """What the server said of one append of a group (not a dropped connection), as its
        caller gets it: classified as for any request (below), nothing of it written."""
        cause = scrub(exception_line(exc), self._url).strip()
        session_id = request_session(request)
        text = f"session {session_id!r}: the store refused this commit, nothing of it was written"
        error = self._classified(exc, session_id, f"{text} ({cause})")
        error.__cause__ = self._chained(exc)
        return error

    def _classified(self, exc: BaseException, session_id: str, text: str) -> SessionLogError:
        """The request's own rows refused (a duplicate entry, text the server cannot take:
        ``IntegrityError``, ``DataError``) is a plain ``SessionLogError``; the store failing
        otherwise, whichever session asked (a full disk, a read-only server after a failover,
        a timeout, a table or privilege missing after a migration) a ``SessionStoreError``."""
        if isinstance(exc, (self._psycopg.IntegrityError, self._psycopg.DataError)):
            return SessionLogError(text, session_id=session_id, problem=type(exc).__name__)
        full = isinstance(exc, self._psycopg.Error) and exc.sqlstate == "53100"
        problem = "disk full" if full else ""
        return SessionStoreError(text, session_id=session_id, problem=problem or type(exc).__name__)


def _what(group: list[Request]) -> str:
    """``release of session 's1'``, ``claim``, ``append of 3 sessions``: for the log line."""
    sessions = {request_session(request) for request in group} - {""}
    if not sessions:
        return group[0].op
    if len(sessions) == 1:
        return f"{group[0].op} of session {next(iter(sessions))!r}"
    return f"{group[0].op} of {len(sessions)} sessions"


def _fail(group: list[Request], error: BaseException) -> None:
    for request in group:
        if request.result is None:
            request.result = outcome.Error(error)
