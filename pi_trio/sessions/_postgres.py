"""The PostgreSQL session backend: the same log on a shared server, over psycopg 3's sync API.

Why sync: psycopg's async API is asyncio-only, and no asyncio runs in a pi_trio process. Each
connection is owned by one dedicated thread (:mod:`._writer`, a small pool of them per store):
every psycopg call runs there, never in the Trio thread, and the appends queued while a commit
runs are committed together (group commit, as on SQLite).

Tables (created in the database on first use, beside whatever else it holds): the SQLite ones
(``pi_trio_meta``, ``pi_trio_sessions``, ``pi_trio_entries``), with ``data`` as ``json`` (kept
byte for byte, key order included: a model is sent the arguments exactly as it wrote them;
``jsonb`` would reorder keys), plus ``pi_trio_inbox`` for :meth:`SessionStore.enqueue` and a
``pending`` flag per session for the worker pool.

Leases expire: a holder gets ``lease_ttl`` seconds (by the server's clock, so machines need not
agree on the time) and renews them; a lease that expired is lost even when no one else took it
yet. Every ``append`` locks its sessions' rows (``FOR SHARE``) and checks epoch, holder and
expiry in the transaction that inserts, so a holder that lost its lease writes nothing, and one
that takes over sees every entry committed before it (``acquire`` waits for those row locks).

Cancellation: a request, once queued to a connection's thread, completes (commits or rolls back)
before its caller goes on; the store's end closes the connections after their last request. A
server that stops answering blocks that thread's requests until the connection fails.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import outcome
import trio

from .._errors import SessionBusyError, SessionLogError, SessionNotFoundError
from ._backend import Holder, Lease, Row, SessionInfo, StoredRow
from ._group import GroupCommitter
from ._pg_append import append_group
from ._pg_retry import Retrying, transaction
from ._pg_schema import (
    CHANNEL,
    LAST_SEEN,
    NOW,
    check_or_create,
    import_psycopg,
    redact,
    scrub,
)
from ._writer import DedicatedThread, Request

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresBackend"]


class PostgresBackend:
    """Session logs in a PostgreSQL database. Build with :meth:`open`; see the module doc."""

    def __init__(
        self, url: str, *, lease_ttl: float, connections: int, reconnect_for: float = 10.0
    ) -> None:
        self._url = url
        self.description = redact(url)
        self.lease_ttl = lease_ttl
        self._psycopg = import_psycopg()
        self._retrying = [
            Retrying(self.description, url, self._psycopg, reconnect_for)
            for _ in range(connections)
        ]
        self._threads: list[DedicatedThread] = []
        self._connections: list[psycopg.Connection[Any] | None] = [None] * connections
        for index in range(connections):
            self._threads.append(
                DedicatedThread(
                    f"pi_trio sessions postgres {index}",
                    functools.partial(self._handle, index),
                    functools.partial(self._connect, index),
                    functools.partial(self._disconnect, index),
                )
            )
        self._rotation = itertools.cycle(range(connections))
        self.commits = GroupCommitter(self._threads)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        lease_ttl: float = 30.0,
        connections: int = 2,
        reconnect_for: float = 10.0,
    ) -> PostgresBackend:
        """Connect (``connections`` connections), create the tables when missing.
        ``reconnect_for``: how long a request whose connection dropped tries new ones
        (:mod:`._pg_retry`).

        Raises:
            ImportError: psycopg is not installed (``pip install 'pi-trio[postgres]'``).
            pt.SessionLogError: the database holds another application's or a newer
                pi_trio's tables, or cannot be reached (the message names the server, never
                the password).
        """
        if not lease_ttl > 0:
            raise ValueError(f"lease_ttl must be a positive number of seconds, not {lease_ttl!r}")
        if connections < 1:
            raise ValueError(f"connections must be at least 1, not {connections!r}")
        if not reconnect_for >= 0:
            raise ValueError(
                f"reconnect_for must be a number of seconds (0 or more), not {reconnect_for!r}"
            )
        backend = cls(
            url, lease_ttl=lease_ttl, connections=connections, reconnect_for=reconnect_for
        )
        started: list[DedicatedThread] = []
        try:
            for thread in backend._threads:
                await thread.start()
                started.append(thread)
        except BaseException:
            with trio.CancelScope(shield=True):
                for thread in started:
                    await thread.stop()
            raise
        return backend

    async def aclose(self) -> None:
        for thread in self._threads:
            await thread.stop()

    # --- in the threads ----------------------------------------------------------------------

    def connect_raw(self) -> psycopg.Connection[Any]:
        """A new autocommit connection (for LISTEN); errors without the password."""
        try:
            conn: psycopg.Connection[Any] = self._psycopg.connect(
                self._url, autocommit=True, connect_timeout=10
            )
        except self._psycopg.Error as exc:
            raise SessionLogError(
                f"cannot connect to the session store {self.description}: "
                f"{scrub(str(exc), self._url).strip()}",
                problem="cannot connect",
            ) from None
        return conn

    def _connect(self, index: int) -> None:
        conn = self.connect_raw()
        try:
            if index == 0:
                check_or_create(conn, self.description)
        except BaseException:
            conn.close()
            raise
        self._connections[index] = conn

    def _conn(self, index: int) -> psycopg.Connection[Any]:
        conn = self._connections[index]
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                conn.close()
            self._connections[index] = None
            conn = self._connections[index] = self.connect_raw()
        return conn

    def _disconnect(self, index: int) -> None:
        conn = self._connections[index]
        if conn is not None:
            conn.close()
            self._connections[index] = None

    def _handle(self, index: int, work: list[Request]) -> None:
        """One batch: consecutive appends share one transaction; other ops run one by one."""
        position = 0
        while position < len(work):
            request = work[position]
            if request.op == "append":
                end = position
                while end < len(work) and work[end].op == "append":
                    end += 1
                self._guarded(index, work[position:end], self._append_group)
                position = end
                continue
            self._guarded(index, [request], self._one_op)
            position += 1

    def _one_op(self, conn: psycopg.Connection[Any], group: list[Request]) -> None:
        request = group[0]
        request.result = _value(getattr(self, "_op_" + request.op)(conn, *request.args))

    def _guarded(self, index: int, group: list[Request], run: Any) -> None:
        """``run(conn, group)``; a dropped connection is replaced and ``run`` retried where
        that is safe, for up to ``reconnect_for`` seconds (:mod:`._pg_retry`)."""
        self._retrying[index].run(functools.partial(self._conn, index), group, run)

    def _append_group(self, conn: psycopg.Connection[Any], group: list[Request]) -> None:
        """Every request's rows in one transaction, after locking and checking their sessions'
        leases; what one session's rows make the server refuse fails that session alone
        (:mod:`._pg_append`)."""
        append_group(conn, group, self._psycopg, self._retrying[0].refusal)

    def _lease_row(self, conn: psycopg.Connection[Any], sid: str, holder: Holder) -> Any:
        return conn.execute(
            "UPDATE pi_trio_sessions SET epoch = epoch + 1, holder = %s, holder_pid = %s, "
            f"holder_start = %s, lease_expires = {NOW} + %s, pending = true "
            "WHERE session_id = %s RETURNING epoch",
            (holder.token, holder.pid, holder.process_start, self._ttl_ms, sid),
        ).fetchone()

    @property
    def _ttl_ms(self) -> int:
        return int(self.lease_ttl * 1000)

    def _op_acquire(
        self, conn: psycopg.Connection[Any], session_id: str, holder: Holder
    ) -> Lease | str:
        with conn.transaction():
            conn.execute(
                f"INSERT INTO pi_trio_sessions (session_id, created, epoch) VALUES (%s, {NOW}, "
                "0) ON CONFLICT (session_id) DO NOTHING",
                (session_id,),
            )
            current, live = _one(
                conn.execute(
                    f"SELECT holder, coalesce(lease_expires > {NOW}, false) FROM pi_trio_sessions "
                    "WHERE session_id = %s FOR UPDATE",
                    (session_id,),
                )
            )
            if current is not None and live and current != holder.token:  # (a retry: ours)
                return str(current)
            (epoch,) = self._lease_row(conn, session_id, holder)
            ((_, last, seen),) = conn.execute(LAST_SEEN, ([session_id],)).fetchall()
        return self._lease(session_id, epoch, holder, last, seen)

    def _lease(
        self, sid: str, epoch: int, holder: Holder, last: int | None, seen: int | None
    ) -> Lease:
        return Lease(sid, epoch, holder, last or 0, not last, self.lease_ttl, seen or 0)

    def _op_claim(
        self, conn: psycopg.Connection[Any], holder: Holder, limit: int, skip: list[str]
    ) -> list[Lease]:
        with conn.transaction():
            claimed = conn.execute(
                "WITH free AS (SELECT session_id FROM pi_trio_sessions WHERE pending AND "
                f"(holder IS NULL OR lease_expires <= {NOW}) AND session_id <> ALL(%s) "
                "ORDER BY created, session_id LIMIT %s FOR UPDATE SKIP LOCKED) "
                "UPDATE pi_trio_sessions AS s SET epoch = s.epoch + 1, holder = %s, "
                f"holder_pid = %s, holder_start = %s, lease_expires = {NOW} + %s "
                "FROM free WHERE s.session_id = free.session_id RETURNING s.session_id, s.epoch",
                (skip, limit, holder.token, holder.pid, holder.process_start, self._ttl_ms),
            ).fetchall()
            if not claimed:
                return []
            found = conn.execute(LAST_SEEN, ([sid for sid, _ in claimed],)).fetchall()
        marks = {sid: (last, seen) for sid, last, seen in found}
        return [self._lease(sid, epoch, holder, *marks[sid]) for sid, epoch in claimed]

    def _op_renew(self, conn: psycopg.Connection[Any], lease: Lease) -> bool:
        cursor = conn.execute(
            f"UPDATE pi_trio_sessions SET lease_expires = {NOW} + %s WHERE session_id = %s "
            f"AND epoch = %s AND holder = %s AND lease_expires > {NOW}",
            (self._ttl_ms, lease.session_id, lease.epoch, lease.holder.token),
        )
        return cursor.rowcount == 1

    def _op_release(
        self, conn: psycopg.Connection[Any], lease: Lease, idle: bool, give_up: bool
    ) -> None:
        with conn.transaction():
            row = conn.execute(
                "SELECT 1 FROM pi_trio_sessions WHERE session_id = %s AND epoch = %s AND "
                "holder = %s FOR UPDATE",
                (lease.session_id, lease.epoch, lease.holder.token),
            ).fetchone()
            if row is None:
                return
            # a new statement, after the lock: it sees every enqueue that committed before
            # pending: work left, or (giving up) input that came after the lease was taken
            after = lease.inbox_seen if give_up else 0  # (ids start at 1)
            conn.execute(
                "UPDATE pi_trio_sessions SET holder = NULL, holder_pid = NULL, "
                "holder_start = NULL, lease_expires = NULL, pending = (%s OR EXISTS (SELECT 1 "
                "FROM pi_trio_inbox WHERE session_id = %s AND id > %s)) WHERE session_id = %s",
                (not idle and not give_up, lease.session_id, after, lease.session_id),
            )

    def _op_enqueue(
        self, conn: psycopg.Connection[Any], session_id: str, kind: str, data: str, when: int
    ) -> int:
        with transaction(conn, self._psycopg):
            # the session's row first: its lock orders the session's inbox ids by commit, so
            # a lease's inbox_seen (read under that lock) is below every later message's id
            if kind == "decision":  # about a waiting call: never brings a deleted session back
                found = conn.execute(
                    "UPDATE pi_trio_sessions SET pending = true WHERE session_id = %s",
                    (session_id,),
                )
                if found.rowcount != 1:
                    raise SessionNotFoundError(
                        f"no session {session_id!r} in {self.description} (deleted)",
                        session_id=session_id,
                    )
            else:
                conn.execute(
                    f"INSERT INTO pi_trio_sessions (session_id, created, epoch, pending) VALUES "
                    f"(%s, {NOW}, 0, true) ON CONFLICT (session_id) DO UPDATE SET pending = true",
                    (session_id,),
                )
            (ident,) = _one(
                conn.execute(
                    "INSERT INTO pi_trio_inbox (session_id, kind, data, time) VALUES (%s, %s, "
                    "%s::json, %s) RETURNING id",
                    (session_id, kind, data, when),
                )
            )
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, session_id))
        return int(ident)

    def _op_inbox(self, conn: psycopg.Connection[Any], session_id: str) -> list[Any]:
        return conn.execute(
            "SELECT id, kind, data::text FROM pi_trio_inbox WHERE session_id = %s ORDER BY id",
            (session_id,),
        ).fetchall()

    def _op_has_session(self, conn: psycopg.Connection[Any], session_id: str) -> bool:
        query = "SELECT 1 FROM pi_trio_sessions WHERE session_id = %s"
        return conn.execute(query, (session_id,)).fetchone() is not None

    def _op_load_rows(self, conn: psycopg.Connection[Any], session_id: str) -> list[StoredRow]:
        return conn.execute(
            "SELECT seq, kind, data::text, time, epoch, version FROM pi_trio_entries "
            "WHERE session_id = %s ORDER BY seq",
            (session_id,),
        ).fetchall()

    def _op_list_sessions(self, conn: psycopg.Connection[Any]) -> list[SessionInfo]:
        rows = conn.execute(
            f"SELECT s.session_id, s.created, s.epoch, CASE WHEN s.lease_expires > {NOW} "
            "THEN s.holder END, e.time, coalesce(e.seq, 0), s.pending, (SELECT count(*) "
            "FROM pi_trio_inbox i WHERE i.session_id = s.session_id) FROM pi_trio_sessions s "
            "LEFT JOIN LATERAL (SELECT time, seq FROM pi_trio_entries l WHERE l.session_id = "
            "s.session_id ORDER BY seq DESC LIMIT 1) e ON true ORDER BY s.created, s.session_id"
        ).fetchall()
        return [
            SessionInfo(sid, created, updated or created, count, epoch, holder, queued, pending)
            for sid, created, epoch, holder, updated, count, pending, queued in rows
        ]

    def _op_delete(self, conn: psycopg.Connection[Any], session_id: str) -> bool:
        with transaction(conn, self._psycopg):
            row = conn.execute(
                f"SELECT holder, coalesce(lease_expires > {NOW}, false) FROM pi_trio_sessions "
                "WHERE session_id = %s FOR UPDATE",
                (session_id,),
            ).fetchone()
            if row is None:
                return False
            if row[0] is not None and row[1]:
                raise SessionBusyError(
                    f"session {session_id!r} is held by {row[0]}: it cannot be deleted while open",
                    session_id=session_id,
                    holder=row[0],
                )
            for table in ("pi_trio_entries", "pi_trio_inbox", "pi_trio_sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))
        return True

    # --- from Trio ---------------------------------------------------------------------------

    async def _call(self, op: str, *args: Any) -> Any:
        # appends go through self.commits (a batch per free connection); the rest rotate
        return await self._threads[next(self._rotation)].call(op, *args)

    async def acquire(self, session_id: str, holder: Holder) -> Lease | str:
        """See :class:`SessionBackend`; cancellation: the transaction completes first."""
        result: Lease | str = await self._call("acquire", session_id, holder)
        return result

    async def claim(self, holder: Holder, limit: int, skip: Sequence[str] = ()) -> list[Lease]:
        """Leases on up to ``limit`` free sessions with pending work, none of those in ``skip``
        (``SKIP LOCKED``: workers never wait on each other). Cancellation: the transaction
        completes first."""
        leases: list[Lease] = await self._call("claim", holder, limit, list(skip))
        return leases

    async def renew(self, lease: Lease) -> bool:
        """Extend the lease by ``lease_ttl``; False when it is lost (expired or taken)."""
        renewed: bool = await self._call("renew", lease)
        return renewed

    async def release(self, lease: Lease, *, idle: bool = False, give_up: bool = False) -> None:
        """Give the lease back; ``idle``: the holder left no queued work (else a worker will
        claim the session); ``give_up``: not pending, whatever is queued, until new input."""
        await self._call("release", lease, idle, give_up)

    async def append(self, lease: Lease, rows: Sequence[Row], inbox: Sequence[int] = ()) -> None:
        """Commit ``rows`` (and delete the ``inbox`` rows they move into the log) in one
        transaction that checks the lease first; shared with other pending appends.

        Raises:
            pt.SessionBusyError: the lease is no longer current (expired or taken over).
        """
        await self.commits.append((lease, rows, tuple(inbox)))

    async def enqueue(self, session_id: str, kind: str, data: str, when: int) -> int:
        """Put a message in the session's inbox (creating the session if new); its id."""
        ident: int = await self._call("enqueue", session_id, kind, data, when)
        return ident

    async def inbox(self, session_id: str) -> list[tuple[int, str, str]]:
        rows: list[tuple[int, str, str]] = await self._call("inbox", session_id)
        return rows

    async def has_session(self, session_id: str) -> bool:
        found: bool = await self._call("has_session", session_id)
        return found

    async def load_rows(self, session_id: str) -> list[StoredRow]:
        rows: list[StoredRow] = await self._call("load_rows", session_id)
        return rows

    async def list_sessions(self) -> list[SessionInfo]:
        infos: list[SessionInfo] = await self._call("list_sessions")
        return infos

    async def delete(self, session_id: str) -> bool:
        deleted: bool = await self._call("delete", session_id)
        return deleted


def _one(cursor: Any) -> Any:
    row = cursor.fetchone()
    assert row is not None
    return row


def _value(value: Any) -> outcome.Outcome[Any]:
    return outcome.Value(value)
