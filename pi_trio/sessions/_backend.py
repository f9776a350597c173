"""What a storage engine provides to :class:`pt.SessionStore`: the backend protocol.

Everything above it (the recorder, resume, repair, the log's meaning) is shared; a backend only
stores rows and holder leases. SQLite (:mod:`._sqlite`) is the embedded default; a PostgreSQL
backend implements the same protocol over the same tables (see ``SCHEMA``) with ``jsonb`` for
``data`` and an expiring lease renewed by its holder.

Leases: ``acquire`` makes the caller the session's only holder and bumps its ``epoch``; every
``append`` checks, in the same transaction as its inserts, that the session's epoch is still the
lease's, and fails with :class:`pt.SessionBusyError` otherwise, so two holders never interleave
entries (each entry carries the epoch it was written under).

PostgreSQL (:mod:`._postgres`): the same three tables (``pi_trio_meta``, ``pi_trio_sessions``
with ``lease_expires`` set and renewed by the holder, ``pi_trio_entries`` with ``data`` as
``json``: kept byte for byte, where ``jsonb`` would reorder keys); ``acquire`` takes a free or
expired lease with ``UPDATE ... SET epoch = epoch + 1`` (``FOR UPDATE SKIP LOCKED`` for a worker
pool); ``append`` locks its sessions' rows ``FOR SHARE``, checks epoch, holder and expiry, and
inserts in the same transaction. ``store.enqueue`` from a process that does not hold the session
cannot append to its log (no lease): it writes to an inbox table that the holder moves into its
log as ``queued`` entries (in the same transaction as it deletes them), so the log keeps one
writer at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

import attrs

__all__ = [
    "MAX_NEW_ID_BYTES",
    "SCHEMA_VERSION",
    "Holder",
    "Lease",
    "LeasedBackend",
    "Row",
    "SessionBackend",
    "SessionInfo",
    "SessionLookup",
    "as_leased",
    "check_new_session_id",
    "check_session_id",
    "long_id_error",
    "session_exists",
]

SCHEMA_VERSION = 1
"""Version of the tables below; a store written by a newer pi_trio is refused."""

Row: TypeAlias = tuple[int, str, str, int, int]
"""An entry to append: ``(seq, kind, data_json, time_ms, format_version)``."""

StoredRow: TypeAlias = tuple[int, str, str, int, int, int]
"""An entry read back: ``(seq, kind, data_json, time_ms, epoch, format_version)``."""


@attrs.frozen
class Holder:
    """Who asks for a lease: a unique token, and the process (for liveness on one machine)."""

    token: str
    pid: int
    process_start: str
    """An id of the process's start (Linux: its start time in clock ticks), so that a reused
    pid is not taken for a live holder."""


@attrs.frozen
class Lease:
    """A holder's exclusive right to append to one session, valid while ``epoch`` is current."""

    session_id: str
    epoch: int
    holder: Holder
    last_seq: int
    """The highest ``seq`` in the log when the lease was taken (0: an empty or new session)."""
    created: bool
    ttl: float | None = None
    """Seconds the lease lasts unless renewed (PostgreSQL); None: until released (SQLite, where
    a holder whose process is gone is known to be dead)."""
    inbox_seen: int = 0
    """The highest inbox id when the lease was taken (PostgreSQL): a holder giving up on the
    session leaves it pending only for input that came after."""


@attrs.frozen
class SessionInfo:
    """One session of a store, as :meth:`pt.SessionStore.list_sessions` lists it.

    Times are Unix milliseconds; ``updated`` is its last entry's (``created`` before the
    first); ``entries`` is its last entry's number (entries are numbered from 1, without
    gaps), read from the key, so listing costs the same however long the logs are;
    ``holder`` describes the current holder (``pid@host``) or is None when the session is
    free; ``epoch`` counts the leases taken so far.
    """

    session_id: str
    created: int
    updated: int
    entries: int
    epoch: int
    holder: str | None
    queued: int = 0
    """Messages waiting in its inbox (``store.enqueue``; PostgreSQL)."""
    pending: bool | None = None
    """Whether a worker will claim it (PostgreSQL; None on SQLite, which has no workers). A
    free session with ``queued`` messages that is not pending was set aside after it failed
    (its log could not be read, say): new input, or :meth:`pt.SessionStore.enqueue`, makes it
    pending again."""

    @property
    def set_aside(self) -> bool:
        """Free, with queued input, and not pending: a worker gave up on it."""
        return self.pending is False and self.queued > 0 and self.holder is None


class SessionBackend(Protocol):
    """A storage engine for session logs. All methods are safe to call from one Trio run;
    each says what cancellation leaves behind (a backend never leaves half a transaction)."""

    description: str
    """Where the store lives, for messages (a path; never a password)."""

    async def acquire(self, session_id: str, holder: Holder) -> Lease | str:
        """Take the session's lease (creating the session if it is new); when another live
        holder has it, return a description of that holder instead."""
        ...

    async def release(self, lease: Lease, *, idle: bool = False, give_up: bool = False) -> None:
        """Give the lease back (a no-op when it is no longer current); ``idle``: the holder
        leaves no queued work (a worker pool claims only sessions with work); ``give_up``: no
        worker should retry the session until new input arrives (it failed)."""
        ...

    async def append(self, lease: Lease, rows: Sequence[Row], inbox: Sequence[int] = ()) -> None:
        """Commit ``rows`` in one transaction that checks the lease's epoch first, and that
        deletes the ``inbox`` rows (``store.enqueue``) they move into the log.

        Raises:
            pt.SessionBusyError: the lease is no longer current (nothing was written).
        """
        ...

    async def load_rows(self, session_id: str) -> list[StoredRow]:
        """Every entry of the session in ``seq`` order (empty for an unknown session)."""
        ...

    async def list_sessions(self) -> list[SessionInfo]: ...

    async def delete(self, session_id: str) -> bool:
        """Delete a session and its log; False when there was none.

        Raises:
            pt.SessionBusyError: a live holder has it.
        """
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class LeasedBackend(SessionBackend, Protocol):
    """A backend shared by many processes (PostgreSQL): its leases expire unless renewed, and
    other processes reach a session through its inbox (``store.enqueue``)."""

    async def renew(self, lease: Lease) -> bool:
        """Extend the lease by its ttl; False when it is lost (expired or taken)."""
        ...

    async def enqueue(self, session_id: str, kind: str, data: str, when: int) -> int:
        """Put a message in the session's inbox (creating the session if new); its id."""
        ...

    async def inbox(self, session_id: str) -> list[tuple[int, str, str]]:
        """The session's inbox rows ``(id, kind, data_json)``, oldest first."""
        ...


@runtime_checkable
class SessionLookup(Protocol):
    """A backend that can tell whether it has a session without reading its log (one keyed
    read); the store asks it where a backend without it loads the log, then the listing."""

    async def has_session(self, session_id: str) -> bool:
        """Whether the store has the session: a log, or queued input."""
        ...


_LEASED: dict[type, bool] = {}
_LOOKUP: dict[type, bool] = {}


def as_leased(backend: SessionBackend) -> LeasedBackend | None:
    """``backend`` as a :class:`LeasedBackend`, or None when it is not one (SQLite). The
    Protocol check runs once per backend class: it costs ~25 µs, and the inbox is looked at
    every turn of a worker's session."""
    kind = type(backend)
    leased = _LEASED.get(kind)
    if leased is None:
        leased = _LEASED[kind] = isinstance(backend, LeasedBackend)
    return cast(LeasedBackend, backend) if leased else None


async def session_exists(backend: SessionBackend, session_id: str) -> bool:
    """Whether ``backend`` has the session: one keyed read on a :class:`SessionLookup`, else
    its log, or its row in the listing (a session with queued input and no log yet)."""
    kind = type(backend)
    lookup = _LOOKUP.get(kind)
    if lookup is None:
        lookup = _LOOKUP[kind] = isinstance(backend, SessionLookup)
    if lookup:
        return await cast(SessionLookup, backend).has_session(session_id)
    if await backend.load_rows(session_id):
        return True
    return any(info.session_id == session_id for info in await backend.list_sessions())


MAX_NEW_ID_BYTES = 1024
"""The longest id (UTF-8 bytes) of a new session: PostgreSQL's index and NOTIFY payload take
it with room to spare. A longer id made before the limit stays reachable."""


def check_session_id(session_id: Any) -> int:
    """Refuse an id that no store keeps, before it reaches one (where it failed as different
    errors, one a store failure a worker would retry): a non-empty string, without NUL or
    lone surrogates. Its size in UTF-8 bytes, for the limit on new sessions.

    Raises:
        ValueError: ``session_id`` is not such a string.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"a session id is a non-empty string, not {session_id!r}")
    try:
        size = len(session_id.encode())
    except UnicodeEncodeError:
        size = 0
    if not size or "\x00" in session_id:
        raise ValueError(
            f"a session id is UTF-8 text without NUL characters or lone surrogates, not "
            f"{session_id[:40]!r}{'...' if len(session_id) > 40 else ''}"
        )
    return size


def check_new_session_id(session_id: Any) -> None:
    """:func:`check_session_id`, and the limit on a new session's id.

    Raises:
        ValueError: an id no store keeps, or over :data:`MAX_NEW_ID_BYTES`.
    """
    if check_session_id(session_id) > MAX_NEW_ID_BYTES:
        raise long_id_error(session_id)


def long_id_error(session_id: str) -> ValueError:
    """The error for a new session whose id is over :data:`MAX_NEW_ID_BYTES`."""
    return ValueError(
        f"a new session's id is at most {MAX_NEW_ID_BYTES:,} bytes of UTF-8, not "
        f"{session_id[:40]!r}... (a hash of a longer key is one)"
    )
