"""PostgreSQL's grouped commit: the appends a connection's thread found queued, committed in
one transaction (one statement in the usual case).

A failure that one session's rows cause must fail that session alone: the server refusing its
rows (a duplicate seq, text it cannot store) or refusing it for a reason of its own (a trigger,
a privilege missing on its rows). So when the group's transaction fails with anything but a
dropped connection, the group is committed again with one savepoint per session, and each
session gets its own outcome: committed, or its own error. A dropped connection is left to
:mod:`._pg_retry` (it finds what was committed and runs the rest again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import outcome

from ._pg_schema import INSERT, INSERT_CHECKED, check_leases, columns, lost
from ._writer import Request

__all__ = ["append_group"]

Refusal = Callable[[Request, BaseException], BaseException]
"""The error a request gets for what the server said about its own rows."""


def append_group(conn: Any, group: list[Request], psycopg: Any, refusal: Refusal) -> None:
    """Commit every request of ``group`` (``args``: lease, rows, inbox ids), each after its
    lease is checked; every request ends with its result set.

    Raises:
        psycopg.Error: the connection dropped, or the group was one request (its error is
            classified by the caller, as for any other request).
    """
    try:
        if not any(request.args[2] for request in group):  # no inbox rows to move
            _append_at_once(conn, group)
        else:
            with conn.transaction():
                _insert(conn, check_leases(conn, group))
    except psycopg.Error as exc:
        alone = len(group) == 1 and not isinstance(exc, (psycopg.IntegrityError, psycopg.DataError))
        if conn.broken or conn.closed or alone:
            raise
        _append_one_by_one(conn, group, psycopg, refusal)
    for request in group:
        if request.result is None:
            request.result = outcome.Value(None)


def _append_at_once(conn: Any, group: list[Request]) -> None:
    """The usual path: every row in one statement. The requests whose lease was not current
    (their rows were left out) fail; the others are committed."""
    ids = sorted({request.args[0].session_id for request in group})
    inserted = conn.execute(INSERT_CHECKED, [ids, *columns(group, holders=True)])
    written = {(row[0], row[1]) for row in inserted.fetchall()}
    missing = [
        r for r in group if r.args[1] and (r.args[0].session_id, r.args[0].epoch) not in written
    ]
    if missing:
        epochs = dict(
            conn.execute(
                "SELECT session_id, epoch FROM pi_trio_sessions WHERE session_id = ANY(%s)",
                ([r.args[0].session_id for r in missing],),
            ).fetchall()
        )
        for request in missing:
            lease = request.args[0]
            epoch = epochs.get(lease.session_id)
            request.result = outcome.Error(lost(lease, epoch, expired=epoch == lease.epoch))


def _append_one_by_one(conn: Any, group: list[Request], psycopg: Any, refusal: Refusal) -> None:
    """The group again, one savepoint per request: a request the server fails gets its own
    error, with nothing of it written, and the others are committed."""
    for request in group:
        request.result = None
    with conn.transaction():
        # a deferred constraint (a trigger checked at COMMIT) fires in its own savepoint
        conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for request in check_leases(conn, group):
            try:
                with conn.transaction():
                    _insert(conn, [request])
            except psycopg.Error as exc:
                if conn.broken or conn.closed:
                    raise
                request.result = outcome.Error(refusal(request, exc))


def _insert(conn: Any, group: list[Request]) -> None:
    if any(request.args[1] for request in group):
        conn.execute(INSERT, columns(group, holders=False))
    inbox = [ident for request in group for ident in request.args[2]]
    if inbox:
        conn.execute("DELETE FROM pi_trio_inbox WHERE id = ANY(%s)", (inbox,))
