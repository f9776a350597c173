"""Whether a store has a session (``open_agent(create=False)``, ``pending_approvals(id)``, a
long id's checks) is one keyed read, not a read of the session's log: a backend that implements
``pt.sessions.SessionLookup`` answers it; one that does not is asked through its log and its
listing, as before."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions import SessionBackend, SessionLookup, SqliteBackend


async def _one_turn(store: pt.SessionStore, session_id: str) -> None:
    model = faux.FauxModel([faux.assistant_message("hi")])
    state = pt.AgentState(model=model.model)
    async with store.open_agent(session_id, initial_state=state, stream_fn=model) as agent:
        await agent.prompt("hello")


class _CountingReads:
    """Counts a backend's ``load_rows`` calls (the real backend still answers them)."""

    def __init__(self, backend: Any) -> None:
        self.count = 0
        self._load_rows = backend.load_rows
        backend.load_rows = self

    async def __call__(self, session_id: str) -> Any:
        self.count += 1
        return await self._load_rows(session_id)


async def test_the_stores_own_backends_look_a_session_up_by_its_key(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:
        backend = store.backend
        assert isinstance(backend, SessionLookup)
        await _one_turn(store, "kept")
        assert await backend.has_session("kept")
        assert not await backend.has_session("never")
        reads = _CountingReads(backend)
        async with store.open_agent("kept", create=False) as agent:
            assert [m.role for m in agent.state.messages] == ["user", "assistant"]
        assert reads.count == 1  # the resume's own read: none to learn that the session exists
        with pytest.raises(pt.SessionNotFoundError, match="no session 'never'"):
            async with store.open_agent("never", create=False):
                pass
        assert reads.count == 1
        assert await store.delete("kept")
        assert not await backend.has_session("kept")


async def test_a_session_with_queued_input_and_no_log_is_found(postgres_url: str) -> None:
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("queued", "hello")
        assert await store.backend.has_session("queued")  # type: ignore[attr-defined]
        assert await store.pending_approvals("queued") == []


class _PlainBackend:
    """A backend with the protocol's methods only (no ``has_session``), over SQLite."""

    def __init__(self, inner: SqliteBackend) -> None:
        self.inner = inner
        self.description = inner.description

    async def acquire(self, session_id: str, holder: Any) -> Any:
        return await self.inner.acquire(session_id, holder)

    async def release(self, lease: Any, *, idle: bool = False, give_up: bool = False) -> None:
        await self.inner.release(lease, idle=idle, give_up=give_up)

    async def append(self, lease: Any, rows: Sequence[Any], inbox: Sequence[int] = ()) -> None:
        await self.inner.append(lease, rows, inbox)

    async def load_rows(self, session_id: str) -> Any:
        return await self.inner.load_rows(session_id)

    async def list_sessions(self) -> Any:
        return await self.inner.list_sessions()

    async def delete(self, session_id: str) -> bool:
        return await self.inner.delete(session_id)

    async def aclose(self) -> None:
        pass


async def test_a_backend_without_the_lookup_is_asked_through_its_log(tmp_path: Path) -> None:
    async with pt.open_session_store(tmp_path / "s.db") as real:
        assert isinstance(real.backend, SqliteBackend)
        plain: SessionBackend = _PlainBackend(real.backend)
        assert not isinstance(plain, SessionLookup)
        store = pt.SessionStore(plain)
        await _one_turn(store, "kept")
        lease = await plain.acquire("empty", pt.sessions.Holder("t", 1, "0"))
        assert not isinstance(lease, str)
        await plain.release(lease)  # a row, no log
        assert await store.pending_approvals("kept") == []
        assert await store.pending_approvals("empty") == []
        with pytest.raises(pt.SessionNotFoundError, match="no session 'never'"):
            await store.pending_approvals("never")
