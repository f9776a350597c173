"""The store below the agent, on SQLite and PostgreSQL alike (``store_url``): opening, refusing
foreign stores, leases, bad entries; then what only one of the two has."""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.sessions import SessionInfo
from pi_trio.sessions._holders import new_holder

from ._helpers import answering_options
from .conftest import Raw


def _is_pg(url: str) -> bool:
    return url.startswith("postgresql://")


async def test_a_new_store_is_made_and_reopens(store_url: str, raw: Raw) -> None:
    async with pt.open_session_store(store_url) as store:
        assert await store.list_sessions() == []
        assert await store.load("nobody") == []
        assert await store.delete("nobody") is False
    if not _is_pg(store_url):
        assert raw("PRAGMA journal_mode")[0][0] == "wal"
    assert dict(raw("SELECT key, value FROM pi_trio_meta")) == {
        "application": "pi_trio.sessions",
        "schema_version": "1",
    }
    again = store_url if _is_pg(store_url) else f"sqlite://{store_url}"
    async with pt.open_session_store(again) as store:
        assert await store.list_sessions() == []


async def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some notes, not a database at all" * 100)
    with pytest.raises(pt.SessionLogError, match="is not a pi_trio session store"):
        async with pt.open_session_store(text):
            pass
    assert text.read_text().startswith("just some notes")  # untouched

    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (name TEXT)")
    db.commit()
    db.close()
    before = other.read_bytes()
    with pytest.raises(pt.SessionLogError, match="without pi_trio's tables"):
        async with pt.open_session_store(other):
            pass
    assert other.read_bytes() == before  # not even switched to WAL mode


async def test_a_store_of_a_newer_pi_trio_is_refused(store_url: str, raw: Raw) -> None:
    async with pt.open_session_store(store_url):
        pass
    raw("UPDATE pi_trio_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(pt.SessionLogError, match="newer pi_trio"):
        async with pt.open_session_store(store_url):
            pass


async def test_unknown_url_schemes_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown session store URL scheme 'redis'"):
        async with pt.open_session_store("redis://localhost"):
            pass


async def test_one_holder_at_a_time_and_each_lease_a_new_epoch(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:
        backend = store.backend
        first = await backend.acquire("s", new_holder("one"))
        assert not isinstance(first, str) and first.epoch == 1 and first.created
        second = await backend.acquire("s", new_holder("two"))
        assert isinstance(second, str) and second.startswith("one@")
        await backend.append(first, [(1, "run_start", "{}", 5, 1)])
        await backend.release(first)
        third = await backend.acquire("s", new_holder("three"))
        assert not isinstance(third, str) and (third.epoch, third.last_seq) == (2, 1)
        # the first holder's lease is stale: its append is refused, nothing is written
        with pytest.raises(pt.SessionBusyError, match="lost it"):
            await backend.append(first, [(2, "run_end", '{"reason": "stop"}', 6, 1)])
        assert [e.seq for e in await store.load("s")] == [1]
        await backend.append(third, [(2, "run_end", '{"reason": "stop"}', 6, 1)])
        entries = await store.load("s")
        assert [(e.seq, e.kind, e.epoch) for e in entries] == [
            (1, "run_start", 1),
            (2, "run_end", 2),
        ]
        with pytest.raises(pt.SessionBusyError, match="cannot be deleted while open"):
            await store.delete("s")
        infos = await store.list_sessions()
        assert [(i.session_id, i.entries, i.epoch) for i in infos] == [("s", 2, 2)]
        assert isinstance(infos[0], SessionInfo) and infos[0].holder is not None
        await backend.release(third)
        assert (await store.list_sessions())[0].holder is None
        assert await store.delete("s") is True
        assert await store.load("s") == []


async def test_a_listing_reads_each_sessions_last_entry(store_url: str) -> None:
    """``entries`` and ``updated`` come from each session's last entry (read by its key, not by
    walking its log): a clock that went back since an earlier entry does not make the listing
    say that entry's time, and a session with no entry yet says its creation."""
    async with pt.open_session_store(store_url) as store:
        backend = store.backend
        lease = await backend.acquire("long", new_holder("one"))
        empty = await backend.acquire("empty", new_holder("one"))
        assert not isinstance(lease, str) and not isinstance(empty, str)
        rows = [(seq, "custom", "{}", 9_000 if seq == 2 else 1_000 + seq, 1) for seq in (1, 2, 3)]
        await backend.append(lease, rows)
        infos = {i.session_id: i for i in await store.list_sessions()}
    assert (infos["long"].entries, infos["long"].updated) == (3, 1_003)
    assert (infos["empty"].entries, infos["empty"].updated) == (0, infos["empty"].created)


async def test_a_dead_process_is_no_holder(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    child = await trio.run_process(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_stdout=True
    )
    dead_pid = int(child.stdout)
    async with pt.open_session_store(path) as store:
        lease = await store.backend.acquire("s", new_holder("mine"))
        assert not isinstance(lease, str)
    db = sqlite3.connect(path)
    db.execute("UPDATE pi_trio_sessions SET holder = 'gone@x', holder_pid = ?", (dead_pid,))
    db.commit()
    db.close()
    async with pt.open_session_store(path) as store:
        again = await store.backend.acquire("s", new_holder("next"))
        assert not isinstance(again, str) and again.epoch == 2


@pytest.mark.parametrize(
    ("kind", "data", "version", "problem"),
    [
        ("telepathy", "{}", 1, "unknown entry kind 'telepathy'"),
        ("message", "{}", 7, "entry format version 7 is newer"),
        # JSON either server stores and Python's parser refuses: too deep to read back
        ("message", "[" * 12_000 + "]" * 12_000, 1, "bad JSON in entry data"),
    ],
)
async def test_a_bad_entry_names_session_seq_and_problem(
    store_url: str, raw: Raw, kind: str, data: str, version: int, problem: str
) -> None:
    await _bad_entry_is_refused_and_kept(store_url, raw, kind, data, version, problem)


async def test_bad_json_in_sqlite_names_session_seq_and_problem(tmp_path: Path) -> None:
    """SQLite stores any text; PostgreSQL's jsonb column refuses it when it is written."""
    store_url = str(tmp_path / "agents.db")
    raw = Raw("sqlite", store_url)
    await _bad_entry_is_refused_and_kept(
        store_url, raw, "message", "{not json", 1, "bad JSON in entry data"
    )


async def _bad_entry_is_refused_and_kept(
    store_url: str, raw: Raw, kind: str, data: str, version: int, problem: str
) -> None:
    async with pt.open_session_store(store_url) as store:
        lease = await store.backend.acquire("s", new_holder("w"))
        assert not isinstance(lease, str)
        await store.backend.append(
            lease, [(1, "run_start", "{}", 1, 1), (2, kind, data, 2, version)]
        )
        with pytest.raises(pt.SessionLogError) as caught:
            await store.load("s")
        assert (caught.value.session_id, caught.value.seq) == ("s", 2)
        assert problem in caught.value.problem and "session 's', entry seq 2" in str(caught.value)
        await store.backend.release(lease)
        with pytest.raises(pt.SessionLogError, match=problem):
            async with store.open_agent("s"):
                pass
    # nothing overwritten or dropped
    assert raw("SELECT seq, kind, CAST(data AS TEXT) FROM pi_trio_entries ORDER BY seq") == [
        (1, "run_start", "{}"),
        (2, kind, data),
    ]


async def test_a_compaction_entry_keeping_what_is_no_system_message_is_refused(
    store_url: str,
) -> None:
    async with pt.open_session_store(store_url) as store:
        lease = await store.backend.acquire("s", new_holder("w"))
        assert not isinstance(lease, str)
        user = json.dumps({"role": "user", "content": "hi", "timestamp": 1})
        compaction = json.dumps(
            {"summary": "s", "tokensBefore": 1, "firstKept": 1, "keptCount": 0, "timestamp": 2}
            | {"systemKept": [0]}  # the user message
        )
        await store.backend.append(
            lease, [(1, "message", user, 1, 1), (2, "compaction", compaction, 2, 1)]
        )
        await store.backend.release(lease)
        with pytest.raises(pt.SessionLogError, match=r"entry seq 2: .*systemKept"):
            async with store.open_agent("s"):
                pass


async def test_a_message_entry_that_is_not_pi_json_is_refused(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:
        lease = await store.backend.acquire("s", new_holder("w"))
        assert not isinstance(lease, str)
        bad = json.dumps({"role": "assistant", "content": "not a list"})
        await store.backend.append(lease, [(1, "message", bad, 1, 1)])
        await store.backend.release(lease)
        with pytest.raises(pt.SessionLogError, match="entry seq 1: not a pi message"):
            async with store.open_agent("s"):
                pass


async def test_a_duplicate_seq_fails_alone_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    async with pt.open_session_store(path) as store:
        backend = store.backend
        leases = [await backend.acquire(name, new_holder(name)) for name in ("one", "two", "x")]
        one, two, other = leases
        assert not isinstance(one, str) and not isinstance(two, str)
        assert not isinstance(other, str)
        await backend.append(one, [(1, "run_start", "{}", 1, 1)])
        blocker = sqlite3.connect(path)
        blocker.execute("BEGIN IMMEDIATE")  # the store's thread waits on this lock...

        async def dup() -> None:
            with pytest.raises(pt.SessionLogError, match="refused this commit") as caught:
                await backend.append(one, [(2, "run_end", "{}", 2, 1), (1, "run_end", "{}", 2, 1)])
            assert not isinstance(caught.value, pt.SessionStoreError)  # the commit, not the store
            assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(backend.append, other, [(1, "run_start", "{}", 3, 1)])
            await trio.sleep(0.1)
            nursery.start_soon(dup)  # ...while these two queue up: one group commit
            nursery.start_soon(backend.append, two, [(1, "run_start", "{}", 3, 1)])
            await trio.sleep(0.1)
            blocker.rollback()
            blocker.close()
        assert [(e.seq, e.kind) for e in await store.load("one")] == [(1, "run_start")]
        assert [(e.seq, e.kind) for e in await store.load("two")] == [(1, "run_start")]


def _store_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("pi_trio sessions"))


async def test_no_thread_outlives_the_store_and_a_cancelled_open_frees_the_session(
    store_url: str,
) -> None:
    assert _store_threads() == []
    async with pt.open_session_store(store_url) as store:
        assert _store_threads() == (
            ["pi_trio sessions postgres 0", "pi_trio sessions postgres 1"]
            if _is_pg(store_url)
            else ["pi_trio sessions agents.db"]
        )
        with trio.CancelScope() as scope:
            scope.cancel()  # cancelled while taking the lease and reading the log
            async with store.open_agent("s"):
                pytest.fail("the block must not run")  # pragma: no cover
        async with store.open_agent("s"):  # the session was given back
            pass
        with trio.move_on_after(0.01):
            async with store.open_agent("t"):
                await trio.sleep_forever()  # cancelled inside the block
        async with store.open_agent("t"):
            pass
        assert [i.holder for i in await store.list_sessions()] == [None, None]
    assert _store_threads() == []


async def test_a_block_left_by_a_cancellation_still_commits_what_was_noted(
    store_url: str,
) -> None:
    async with pt.open_session_store(store_url) as store:
        with trio.CancelScope() as scope:
            async with store.open_agent("s") as agent:
                agent.follow_up("do not forget me")
                scope.cancel()  # leaving the block by a cancellation
                await trio.sleep_forever()
        async with store.open_agent("s") as agent:
            assert agent.has_queued_messages()


@pytest.mark.parametrize("count", [3, 70], ids=["as-parameters", "as-json"])
async def test_a_commit_of_any_size_checks_the_lease(tmp_path: Path, count: int) -> None:
    # up to _VALUES_ROWS rows are bound as parameters, more go as one JSON array: both keep
    # only the rows of a lease that is still the session's
    async with pt.open_session_store(tmp_path / "a.db") as store:
        backend = store.backend
        first = await backend.acquire("s", new_holder("one"))
        assert not isinstance(first, str)
        batch = [(seq, "run_start", f'{{"n":{seq}}}', seq, 1) for seq in range(1, count + 1)]
        await backend.append(first, batch)
        await backend.release(first)
        second = await backend.acquire("s", new_holder("two"))
        assert not isinstance(second, str) and second.last_seq == count
        later = [
            (seq + count, kind, data, time, version) for seq, kind, data, time, version in batch
        ]
        with pytest.raises(pt.SessionBusyError, match="lost it"):
            await backend.append(first, later)
        await backend.append(second, later)
        entries = await store.load("s")
        assert [(e.seq, e.epoch) for e in entries] == [
            (seq, 1 if seq <= count else 2) for seq in range(1, 2 * count + 1)
        ]
        assert entries[-1].data == {"n": count}
        await backend.release(second)


async def test_a_sqlite_store_is_not_a_leased_backend(tmp_path: Path) -> None:
    from pi_trio.sessions._backend import LeasedBackend, as_leased

    async with pt.open_session_store(tmp_path / "a.db") as store:
        assert as_leased(store.backend) is None and not isinstance(store.backend, LeasedBackend)
        with pytest.raises(TypeError, match="needs a store with an inbox"):
            await store.enqueue("s", "hello")


@pytest.mark.parametrize("session_id", ["", "nul\x00inside", "lone \ud83d surrogate", 7])
async def test_a_session_id_no_store_keeps_is_refused_before_it_reaches_one(
    store_url: str, session_id: str, tmp_path: Path
) -> None:
    pi_file = tmp_path / "s.jsonl"
    async with pt.open_session_store(store_url) as store:
        async with store.open_agent("src", **answering_options()) as agent:
            await agent.prompt("hello")
        await store.export_pi_session("src", pi_file)
        calls = [
            lambda: store.open_agent(session_id).__aenter__(),
            lambda: store.approve(session_id, "call_1"),
            lambda: store.deny(session_id, "call_1"),
            lambda: store.load(session_id),
            lambda: store.delete(session_id),
            lambda: store.export_pi_session(session_id, tmp_path / "out.jsonl"),
            lambda: store.import_pi_session(pi_file, session_id),
        ]
        if "://" in store_url:  # only PostgreSQL has an inbox
            calls.append(lambda: store.enqueue(session_id, "hello"))
        for call in calls:
            with pytest.raises(ValueError, match="a session id is "):
                await call()
        assert [info.session_id for info in await store.list_sessions()] == ["src"]


@pytest.mark.parametrize("session_id", ["x" * 1025, "é" * 513])
async def test_a_new_session_id_is_at_most_1024_bytes_an_older_longer_one_still_opens(
    store_url: str, raw: Raw, session_id: str, tmp_path: Path
) -> None:
    pi_file = tmp_path / "s.jsonl"
    async with pt.open_session_store(store_url) as store:
        async with store.open_agent("é" * 512, **answering_options()) as agent:  # 1,024 bytes
            await agent.prompt("hello")
        await store.export_pi_session("é" * 512, pi_file)
        calls = [
            lambda: store.open_agent(session_id).__aenter__(),
            lambda: store.import_pi_session(pi_file, session_id),
        ]
        if "://" in store_url:
            calls.append(lambda: store.enqueue(session_id, "hello"))
        for call in calls:
            with pytest.raises(ValueError, match="a new session's id is at most 1,024 bytes"):
                await call()
        assert len(await store.list_sessions()) == 1
        # one made before the limit (PostgreSQL took up to ~2.7 kB): still open, read, deleted
        raw(
            "INSERT INTO pi_trio_sessions (session_id, created, epoch) VALUES (?, 0, 0)", session_id
        )
        async with store.open_agent(session_id, **answering_options()) as agent:
            await agent.prompt("hello")
        assert [e.kind for e in await store.load(session_id)][:1] == ["state"]
        await store.export_pi_session(session_id, tmp_path / "long.jsonl")
        assert await store.delete(session_id)
