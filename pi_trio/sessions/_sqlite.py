"""The embedded session backend: one SQLite file (stdlib ``sqlite3``), WAL mode.

One connection per store, owned by one dedicated thread (:mod:`._writer`): every ``sqlite3``
call runs there, never in the Trio thread, and the requests queued while a commit runs are
taken together, so the appends of many sessions share one transaction. Other processes may use
the same file (SQLite's own locking serialises writers; ``busy_timeout`` bounds the wait).

Holders: a session's row names its holder's token, pid and process start. On one machine (WAL
needs one: it does not work over network file systems) a holder whose process is gone is known
to be dead, so a crashed process's sessions are taken over at once, with a new epoch; a live
holder (in this process or another) makes ``acquire`` report it busy.

``synchronous``: "normal" (the default) keeps every commit across a crash of the process
(SIGKILL included); a power loss or OS crash may lose the last commits, never corrupt the file.
"full" also survives those, at the cost of an fsync per commit.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Literal

import outcome

from .._errors import SessionBusyError, SessionLogError
from ._backend import SCHEMA_VERSION, Holder, Lease, Row, SessionInfo, StoredRow
from ._group import GroupCommitter
from ._holders import holder_alive, holding, let_go
from ._sqlite_faults import store_error, switch_to_wal
from ._sqlite_schema import (
    APPLICATION,
    INSERT,
    INSERT_CHECKED,
    SCHEMA,
    VALUES_ROWS,
    values_insert,
)
from ._writer import DedicatedThread, Request

__all__ = ["SqliteBackend"]


class SqliteBackend:
    """Session logs in one SQLite file. Build with :meth:`open`; see the module docstring."""

    def __init__(self, path: str, *, busy_timeout: float, synchronous: str) -> None:
        self.path = path
        self.description = path
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._db: sqlite3.Connection | None = None
        self._json_insert = True
        self._thread = DedicatedThread(
            f"pi_trio sessions {os.path.basename(path)}", self._handle, self._setup, self._teardown
        )
        self.commits = GroupCommitter([self._thread])

    @classmethod
    async def open(
        cls,
        path: str,
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["normal", "full"] = "normal",
    ) -> SqliteBackend:
        """Open (or create) the store file; refuse one that is not a pi_trio store.

        Raises:
            pt.SessionLogError: the file is not a pi_trio session store, or a newer one.
        """
        if synchronous not in ("normal", "full"):
            raise ValueError(f"synchronous must be 'normal' or 'full', not {synchronous!r}")
        backend = cls(path, busy_timeout=busy_timeout, synchronous=synchronous)
        await backend._thread.start()
        return backend

    async def aclose(self) -> None:
        await self._thread.stop()

    # --- in the thread -----------------------------------------------------------------------

    def _setup(self) -> None:
        if os.path.isdir(self.path):
            raise IsADirectoryError(
                f"the session store {self.path!r} is a directory: give a file in it, "
                f"such as {os.path.join(self.path, 'agents.db')!r}"
            )
        try:
            db = sqlite3.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise store_error(self.path, exc) from exc
        try:
            self._check_or_create(db)
        except sqlite3.Error as exc:
            db.close()
            raise store_error(self.path, exc) from exc
        except BaseException:
            db.close()
            raise
        self._db = db

    def _refuse(self, why: str) -> SessionLogError:
        return SessionLogError(
            f"{self.path} is not a pi_trio session store ({why}); give open_session_store() a "
            "new file or one it created",
            problem=why,
        )

    def _check_or_create(self, db: sqlite3.Connection) -> None:
        """Refuse a foreign file before changing anything in it, then set WAL mode and create
        the tables when the file is new (in a write transaction, in case another process
        creates them at the same moment)."""
        db.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
        try:
            tables = self._tables(db)
        except sqlite3.DatabaseError as exc:
            raise self._refuse(f"not a SQLite database: {exc}") from None
        if tables:
            self._check_meta(db, tables)
        mode = switch_to_wal(db, self._busy_timeout)
        if mode.lower() != "wal" and self.path != ":memory:":
            raise self._refuse(f"cannot use WAL mode (journal mode {mode!r})")
        db.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
        if tables:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = self._tables(db)
            if not tables:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.executemany(
                    "INSERT INTO pi_trio_meta (key, value) VALUES (?, ?)",
                    [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION))],
                )
            else:
                self._check_meta(db, tables)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @staticmethod
    def _tables(db: sqlite3.Connection) -> set[str]:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}

    def _check_meta(self, db: sqlite3.Connection, tables: set[str]) -> None:
        if "pi_trio_meta" not in tables:
            raise self._refuse("a SQLite database without pi_trio's tables")
        meta = dict(db.execute("SELECT key, value FROM pi_trio_meta").fetchall())
        if meta.get("application") != APPLICATION:
            raise self._refuse(f"its application is {meta.get('application')!r}")
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise SessionLogError(
                f"{self.path} was written by a newer pi_trio (store schema {version}, "
                f"this one reads {SCHEMA_VERSION}); upgrade pi_trio",
                problem=f"schema version {version}",
            )

    def _teardown(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _handle(self, work: list[Request]) -> None:
        """One batch: consecutive appends share one transaction; other ops run one by one."""
        db = self._db
        assert db is not None
        index = 0
        while index < len(work):
            request = work[index]
            if request.op == "append":
                end = index
                while end < len(work) and work[end].op == "append":
                    end += 1
                self._append_group(db, work[index:end])
                index = end
                continue
            method = getattr(self, "_op_" + request.op)
            try:
                request.result = _value(method(db, *request.args))
            except BaseException as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                request.result = _error(exc)
            index += 1
        for request in work:  # the driver's errors, as the store's (see ._sqlite_faults)
            failed = request.result
            if isinstance(failed, outcome.Error) and isinstance(failed.error, sqlite3.Error):
                session = request.args[0] if request.args else ""
                sid = session if isinstance(session, str) else session.session_id
                request.result = _error(store_error(self.path, failed.error, sid))

    def _append_group(self, db: sqlite3.Connection, group: list[Request]) -> None:
        """Many sessions' appends in one transaction, in as few statements as possible.

        Each ``execute`` releases and retakes the GIL (``executemany`` once per row); while
        the Trio thread is busy (a thousand agents), retaking it can wait a whole switch
        interval (5 ms), so the number of statements per commit matters far more than their
        size. The usual path is ONE statement in autocommit mode (its own transaction): all
        rows of the group, each inserted only if its session's epoch is still the lease's.
        When rows were left out, their sessions' leases are stale: those requests fail, with
        nothing of theirs written. Anything unusual (a duplicate seq, an SQLite without JSON
        functions, a snapshot another process overtook) takes the explicit path below.
        The rows are parameters (``VALUES_ROWS``) or, for a big group, one JSON array.
        """
        rows = _rows(group)
        statement: str | None = None
        params: list[Any] = []
        if len(rows) <= VALUES_ROWS:
            statement, params = values_insert(len(rows)), [v for row in rows for v in row]
        elif self._json_insert:
            statement, params = INSERT_CHECKED, [json.dumps(rows)]
        if statement is not None:
            try:
                inserted = db.execute(statement, params).rowcount
            except sqlite3.DatabaseError as exc:
                if "no such function" in str(exc) or "no such table: json_each" in str(exc):
                    self._json_insert = False
            else:
                if inserted == len(rows):
                    for request in group:
                        request.result = _value(None)
                    return
                epochs = self._epochs(db, {request.args[0].session_id for request in group})
                for request in group:
                    lease = request.args[0]
                    epoch = epochs.get(lease.session_id)
                    ok = epoch == lease.epoch
                    request.result = _value(None) if ok else _error(_lost(lease, epoch))
                return
        self._append_explicitly(db, group)

    def _append_explicitly(self, db: sqlite3.Connection, group: list[Request]) -> None:
        try:
            db.execute("BEGIN IMMEDIATE")
            epochs = self._epochs(db, {request.args[0].session_id for request in group})
            ready = []
            for request in group:
                lease = request.args[0]
                epoch = epochs.get(lease.session_id)
                if epoch != lease.epoch:
                    request.result = _error(_lost(lease, epoch))
                else:
                    ready.append(request)
            self._append_one_by_one(db, ready)
            db.execute("COMMIT")
        except BaseException as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            for request in group:
                request.result = _error(exc)

    @staticmethod
    def _epochs(db: sqlite3.Connection, session_ids: set[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        ids = sorted(session_ids)
        for start in range(0, len(ids), 500):  # SQLite's bound-parameter limit
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                db.execute(
                    f"SELECT session_id, epoch FROM pi_trio_sessions WHERE session_id IN ({marks})",
                    chunk,
                ).fetchall()
            )
        return found

    @staticmethod
    def _append_one_by_one(db: sqlite3.Connection, group: list[Request]) -> None:
        for request in group:
            db.execute("SAVEPOINT one")
            try:
                db.executemany(INSERT, _rows([request]))
                db.execute("RELEASE one")
                request.result = _value(None)
            except sqlite3.DatabaseError as exc:
                db.execute("ROLLBACK TO one")
                db.execute("RELEASE one")
                request.result = _error(exc)

    def _op_acquire(self, db: sqlite3.Connection, session_id: str, holder: Holder) -> Lease | str:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute(
            "SELECT epoch, holder, holder_pid, holder_start FROM pi_trio_sessions "
            "WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        now = int(time.time() * 1000)
        if row is None:
            db.execute(
                "INSERT INTO pi_trio_sessions (session_id, created, epoch, holder, holder_pid, "
                "holder_start) VALUES (?, ?, 1, ?, ?, ?)",
                (session_id, now, holder.token, holder.pid, holder.process_start),
            )
            db.execute("COMMIT")
            return Lease(session_id, 1, holder, 0, True)
        epoch, current, pid, start = row
        if current is not None and holder_alive(pid, start, current):
            db.execute("ROLLBACK")
            return str(current)
        db.execute(
            "UPDATE pi_trio_sessions SET epoch = ?, holder = ?, holder_pid = ?, holder_start = ? "
            "WHERE session_id = ?",
            (epoch + 1, holder.token, holder.pid, holder.process_start, session_id),
        )
        last = db.execute(
            "SELECT max(seq) FROM pi_trio_entries WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        db.execute("COMMIT")
        return Lease(session_id, epoch + 1, holder, last or 0, False)

    def _op_release(self, db: sqlite3.Connection, lease: Lease) -> None:
        db.execute(
            "UPDATE pi_trio_sessions SET holder = NULL, holder_pid = NULL, holder_start = NULL "
            "WHERE session_id = ? AND epoch = ? AND holder = ?",
            (lease.session_id, lease.epoch, lease.holder.token),
        )

    def _op_has_session(self, db: sqlite3.Connection, session_id: str) -> bool:
        query = "SELECT 1 FROM pi_trio_sessions WHERE session_id = ?"
        return db.execute(query, (session_id,)).fetchone() is not None

    def _op_load_rows(self, db: sqlite3.Connection, session_id: str) -> list[StoredRow]:
        return db.execute(
            "SELECT seq, kind, data, time, epoch, version FROM pi_trio_entries "
            "WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()

    def _op_list_sessions(self, db: sqlite3.Connection) -> list[SessionInfo]:
        rows = db.execute(
            "SELECT s.session_id, s.created, s.epoch, s.holder, s.holder_pid, s.holder_start, "
            "e.time, e.seq FROM pi_trio_sessions s LEFT JOIN pi_trio_entries e ON "
            "e.session_id = s.session_id AND e.seq = (SELECT max(seq) FROM pi_trio_entries l "
            "WHERE l.session_id = s.session_id) ORDER BY s.created, s.session_id"
        ).fetchall()
        infos = []
        for sid, created, epoch, holder, pid, start, updated, count in rows:
            live = holder if holder is not None and holder_alive(pid, start, holder) else None
            infos.append(SessionInfo(sid, created, updated or created, count or 0, epoch, live))
        return infos

    def _op_delete(self, db: sqlite3.Connection, session_id: str) -> bool:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute(
            "SELECT holder, holder_pid, holder_start FROM pi_trio_sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            db.execute("ROLLBACK")
            return False
        if row[0] is not None and holder_alive(row[1], row[2], row[0]):
            db.execute("ROLLBACK")
            raise SessionBusyError(
                f"session {session_id!r} is held by {row[0]}: it cannot be deleted while open",
                session_id=session_id,
                holder=row[0],
            )
        db.execute("DELETE FROM pi_trio_entries WHERE session_id = ?", (session_id,))
        db.execute("DELETE FROM pi_trio_sessions WHERE session_id = ?", (session_id,))
        db.execute("COMMIT")
        return True

    # --- from Trio ---------------------------------------------------------------------------

    async def acquire(self, session_id: str, holder: Holder) -> Lease | str:
        """See :class:`SessionBackend`; cancellation: the transaction completes first."""
        holding(holder.token)  # before the row names it (see ._holders)
        taken = False
        try:
            result: Lease | str = await self._thread.call("acquire", session_id, holder)
            taken = isinstance(result, Lease)
            return result
        finally:
            if not taken:
                let_go(holder.token)

    async def release(self, lease: Lease, *, idle: bool = False, give_up: bool = False) -> None:
        """Give the lease back (``idle``, ``give_up``: no worker pool on SQLite). The holder
        counts as gone even when this fails (a full disk): the session is free to open again
        in this process, and in others once this one ends."""
        try:
            await self._thread.call("release", lease)
        finally:
            let_go(lease.holder.token)

    async def append(self, lease: Lease, rows: Sequence[Row], inbox: Sequence[int] = ()) -> None:
        """Commit ``rows`` with every other session's pending appends, in one transaction
        (:mod:`._group`).

        Cancellation: the commit is not abandoned; it finishes (or rolls back) first.
        """
        if inbox:
            raise TypeError("a SQLite session store has no inbox")
        await self.commits.append((lease, rows))

    async def has_session(self, session_id: str) -> bool:
        found: bool = await self._thread.call("has_session", session_id)
        return found

    async def load_rows(self, session_id: str) -> list[StoredRow]:
        rows: list[StoredRow] = await self._thread.call("load_rows", session_id)
        return rows

    async def list_sessions(self) -> list[SessionInfo]:
        infos: list[SessionInfo] = await self._thread.call("list_sessions")
        return infos

    async def delete(self, session_id: str) -> bool:
        deleted: bool = await self._thread.call("delete", session_id)
        return deleted


def _lost(lease: Lease, epoch: int | None) -> SessionBusyError:
    now = "deleted" if epoch is None else f"now at epoch {epoch}"
    return SessionBusyError(
        f"session {lease.session_id!r}: this holder lost it (its lease is epoch {lease.epoch}, "
        f"the session is {now}); nothing more was written",
        session_id=lease.session_id,
    )


def _rows(group: list[Request]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for request in group:
        lease, entries = request.args
        sid, epoch = lease.session_id, lease.epoch
        rows.extend((sid, s, k, d, t, epoch, v) for (s, k, d, t, v) in entries)
    return rows


def _value(value: Any) -> outcome.Outcome[Any]:
    return outcome.Value(value)


def _error(exc: BaseException) -> outcome.Outcome[Any]:
    return outcome.Error(exc)
