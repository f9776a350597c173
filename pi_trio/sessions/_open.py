"""Opening a session store: ``pt.open_session_store(url)``, an async context manager."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Literal

import trio

from ._backend import SessionBackend
from ._sqlite import SqliteBackend
from ._store import SessionStore

__all__ = ["open_session_store"]


def open_session_store(
    url: str | os.PathLike[str],
    *,
    busy_timeout: float = 5.0,
    synchronous: Literal["normal", "full"] = "normal",
    lease_ttl: float = 30.0,
    connections: int = 2,
    reconnect_for: float = 10.0,
) -> StoreOpener:
    """``async with pt.open_session_store("agents.db") as store``: a session store.

    A plain path or ``sqlite:///path`` is the embedded default: one SQLite file (created when
    missing) in WAL mode, driven by one dedicated thread per store; other processes may open
    the same file. ``busy_timeout`` (seconds) bounds a wait for another process's write lock;
    ``synchronous="full"`` adds an fsync per commit so that commits also survive a power loss
    (the default keeps them across any crash of the process).

    ``postgresql://user:password@host/database`` (any libpq URL) is a shared PostgreSQL
    database (needs ``pip install 'pi-trio[postgres]'``): the same sessions and log for many
    processes and machines, with ``store.enqueue()`` and :func:`pt.serve_sessions`. Its holder
    leases last ``lease_ttl`` seconds unless renewed (the holder renews them every third of
    that); ``connections`` connections, each owned by a dedicated thread. A connection that
    drops (a server restart, a failover, a proxy's idle timeout) is replaced and the request
    run again where that cannot do it twice, for up to ``reconnect_for`` seconds; past that
    the caller gets :class:`pt.SessionStoreError` (see "When the database fails" in the
    sessions guide).

    Raises (at ``async with``):
        ValueError: an unknown URL scheme.
        IsADirectoryError: the path is a directory (give a file in it, ``dir/agents.db``).
        ImportError: a postgresql:// URL without psycopg installed.
        pt.SessionLogError: the file or database is not a pi_trio session store (or a newer
            one's), or the database cannot be reached (the message never holds a password).

    The block's end (cancelled or not) stops the store's threads once their last request is
    done.
    """
    return StoreOpener(_open(url, busy_timeout, synchronous, lease_ttl, connections, reconnect_for))


class StoreOpener(AbstractAsyncContextManager[SessionStore]):
    """What :func:`open_session_store` returns: ``async with`` it for the store. Used as the
    store itself (``open_session_store(path).open_agent(...)``), it says so."""

    def __init__(self, opening: AbstractAsyncContextManager[SessionStore]) -> None:
        self._opening = opening

    async def __aenter__(self) -> SessionStore:
        return await self._opening.__aenter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._opening.__aexit__(kind, value, traceback)

    def __getattr__(self, name: str) -> None:
        raise AttributeError(
            f"open_session_store(...) gives the store to an async with block: "
            f"`async with pt.open_session_store(path) as store: store.{name}(...)`"
        )


def _scheme(url: str | os.PathLike[str]) -> str:
    text = os.fspath(url)
    return text.split("://", 1)[0].lower() if "://" in text else ""


def _sqlite_path(url: str | os.PathLike[str]) -> str:
    text = os.fspath(url)
    if text.startswith("sqlite://"):
        text = text[len("sqlite://") :]
        if not text:
            raise ValueError("sqlite:// needs a path: sqlite:///path/to/agents.db")
        return text
    scheme = _scheme(text)
    if scheme:
        raise ValueError(
            f"unknown session store URL scheme {scheme!r}: give a file path, sqlite:///path "
            "or postgresql://user@host/database"
        )
    return text


@asynccontextmanager
async def _open(
    url: str | os.PathLike[str],
    busy_timeout: float,
    synchronous: Literal["normal", "full"],
    lease_ttl: float,
    connections: int,
    reconnect_for: float,
) -> AsyncIterator[SessionStore]:
    """The store's block (see :func:`open_session_store`)."""
    backend: SessionBackend
    if _scheme(url) in ("postgresql", "postgres"):
        from ._postgres import PostgresBackend  # psycopg only for PostgreSQL stores

        backend = await PostgresBackend.open(
            os.fspath(url),
            lease_ttl=lease_ttl,
            connections=connections,
            reconnect_for=reconnect_for,
        )
    else:
        backend = await SqliteBackend.open(
            _sqlite_path(url), busy_timeout=busy_timeout, synchronous=synchronous
        )
    try:
        yield SessionStore(backend)
    finally:
        with trio.CancelScope(shield=True):
            await backend.aclose()
