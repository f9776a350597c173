"""What the SQLite backend makes of ``sqlite3``'s errors, and its one retried step.

Every ``sqlite3`` error that reaches a caller of the store is a :class:`pt.SessionLogError`
naming the file and the cause, with the driver's exception chained: a refused commit (a
duplicate entry, a row too big) is a ``SessionLogError``; the store failing (a full disk, a
lock held past ``busy_timeout``, an I/O error, a file that cannot be opened) is a
:class:`pt.SessionStoreError`, which leaves the log as it was.

Switching a new file to WAL needs a moment's exclusive lock, and SQLite does not wait for it
under ``busy_timeout`` when another process holds one at that instant (two processes creating
one file): :func:`switch_to_wal` retries it until the timeout.
"""

from __future__ import annotations

import sqlite3
import time

from .._errors import SessionLogError, SessionStoreError

__all__ = ["store_error", "switch_to_wal"]

_PROBLEMS = {
    "SQLITE_FULL": "disk full",
    "SQLITE_BUSY": "busy",
    "SQLITE_LOCKED": "busy",
    "SQLITE_IOERR": "I/O error",
    "SQLITE_CANTOPEN": "cannot open",
    "SQLITE_READONLY": "read-only",
}


def store_error(path: str, exc: sqlite3.Error, session_id: str = "") -> SessionLogError:
    """The error a caller gets for ``exc``, with ``exc`` as its cause."""
    name = exc.sqlite_errorname or ""
    where = f"session {session_id!r}: " if session_id else ""
    error: SessionLogError
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.DataError):  # this commit's own rows
        error = SessionLogError(
            f"{where}the store {path} refused this commit, nothing of it was written ({exc})",
            session_id=session_id,
            problem=type(exc).__name__,
        )
    else:
        primary = "_".join(name.split("_")[:2])  # SQLITE_IOERR_WRITE: SQLITE_IOERR
        problem = _PROBLEMS.get(primary, type(exc).__name__)
        error = SessionStoreError(
            f"{where}session store {path}: {exc} ({name or type(exc).__name__}); nothing "
            "written before is lost",
            session_id=session_id,
            problem=problem,
        )
    error.__cause__ = exc
    return error


def switch_to_wal(db: sqlite3.Connection, busy_timeout: float) -> str:
    """``PRAGMA journal_mode=WAL``, retried while the file is locked, up to ``busy_timeout``
    seconds; the journal mode it ends in."""
    deadline = time.monotonic() + busy_timeout
    delay = 0.001
    while True:
        try:
            return str(db.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorname not in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                raise
            if time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
