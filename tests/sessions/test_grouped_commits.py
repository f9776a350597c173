"""Grouped commits (issue 39): every session's pending appends go into one transaction, a
durable point waits only for the transaction holding its entries, and one session's failure
in a batch is its own."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.sessions import _sqlite
from pi_trio.sessions._backend import Holder, Lease
from pi_trio.sessions._holders import new_holder

from ._helpers import kinds as logged_kinds
from .conftest import Raw


def _row(seq: int) -> tuple[int, str, str, int, int]:
    return (seq, "run_start", "{}", 1, 1)


def _hold_commits(backend: _sqlite.SqliteBackend) -> tuple[threading.Event, threading.Event]:
    """Make the store's thread hold each batch before inserting it: ``inside`` is set once a
    batch is held, and the batch goes on when ``go_on`` is set (or after 10 s)."""
    inside, go_on = threading.Event(), threading.Event()
    insert = backend._append_group

    def held_insert(db: Any, group: list[Any]) -> None:
        inside.set()
        go_on.wait(10)
        insert(db, group)

    backend._append_group = held_insert  # type: ignore[method-assign]
    return inside, go_on


async def _leases(backend: _sqlite.SqliteBackend, count: int) -> list[Lease]:
    leases = []
    for index in range(count):
        lease = await backend.acquire(f"s{index}", Holder(f"holder-{index}", 1, "test"))
        assert isinstance(lease, Lease)
        leases.append(lease)
    return leases


async def test_appends_of_many_sessions_at_once_are_one_transaction(tmp_path: Path) -> None:
    backend = await _sqlite.SqliteBackend.open(str(tmp_path / "g.db"))
    try:
        leases = await _leases(backend, 50)
        before = backend.commits.batches
        async with trio.open_nursery() as nursery:
            for lease in leases:
                nursery.start_soon(backend.append, lease, [_row(1), _row(2)])
        assert backend.commits.batches - before == 1
        for lease in leases:
            assert [row[0] for row in await backend.load_rows(lease.session_id)] == [1, 2]
    finally:
        await backend.aclose()


async def test_appends_arriving_during_a_commit_share_the_next_one(tmp_path: Path) -> None:
    backend = await _sqlite.SqliteBackend.open(str(tmp_path / "g.db"))
    try:
        leases = await _leases(backend, 21)
        before = backend.commits.batches
        order: list[str] = []

        async def first() -> None:
            await backend.append(leases[0], [_row(1)])
            order.append("first")

        async def later(lease: Lease) -> None:
            await backend.append(lease, [_row(1)])
            order.append("later")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            await trio.lowlevel.checkpoint()  # the first batch is closed and on its way
            await trio.lowlevel.checkpoint()
            for lease in leases[1:]:
                nursery.start_soon(later, lease)
        assert backend.commits.batches - before == 2
        assert order[0] == "first"  # each waits only for the transaction holding its rows
    finally:
        await backend.aclose()


async def test_a_lost_lease_fails_only_its_own_append_in_the_batch(tmp_path: Path) -> None:
    backend = await _sqlite.SqliteBackend.open(str(tmp_path / "g.db"))
    try:
        leases = await _leases(backend, 5)
        await backend.release(leases[2])
        stale = leases[2]
        taken = await backend.acquire(stale.session_id, Holder("someone-else", 1, "test"))
        assert isinstance(taken, Lease) and taken.epoch == stale.epoch + 1
        failures: dict[str, BaseException] = {}

        async def append(lease: Lease) -> None:
            try:
                await backend.append(lease, [_row(1)])
            except pt.SessionBusyError as exc:
                failures[lease.session_id] = exc

        async with trio.open_nursery() as nursery:
            for lease in leases:
                nursery.start_soon(append, lease)
        assert set(failures) == {stale.session_id}
        for lease in leases:
            logged = await backend.load_rows(lease.session_id)
            assert len(logged) == (0 if lease is stale else 1)
    finally:
        await backend.aclose()


async def test_a_cancelled_member_of_a_batch_is_not_abandoned(tmp_path: Path) -> None:
    backend = await _sqlite.SqliteBackend.open(str(tmp_path / "g.db"))
    inside, go_on = _hold_commits(backend)
    try:
        leases = await _leases(backend, 3)
        reached: list[str] = []

        async def append(lease: Lease, scope: trio.CancelScope) -> None:
            with scope:
                await backend.append(lease, [_row(1)])
                reached.append(lease.session_id)
                await trio.lowlevel.checkpoint()
                reached.append("after the checkpoint")

        scopes = [trio.CancelScope() for _ in leases]
        async with trio.open_nursery() as nursery:
            for lease, scope in zip(leases, scopes, strict=True):
                nursery.start_soon(append, lease, scope)
            assert await trio.to_thread.run_sync(inside.wait, 10)  # the batch is held
            for scope in scopes[:2]:  # the leader and a member, or two members
                scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            go_on.set()
        for lease in leases:  # every append was committed all the same
            assert len(await backend.load_rows(lease.session_id)) == 1
        # the cancelled ones got their value, and the cancellation at their next checkpoint
        assert sorted(reached) == ["after the checkpoint", "s0", "s1", "s2"]
    finally:
        go_on.set()
        await backend.aclose()


@pytest.mark.parametrize("count", [1, 3])
async def test_durable_agents_on_one_store_group_their_commits(tmp_path: Path, count: int) -> None:
    """Many agents' turns share transactions: fewer commits than the agents' durable points."""
    from pi_trio.providers import faux

    async with pt.open_session_store(tmp_path / "a.db") as store:
        backend = store.backend
        assert isinstance(backend, _sqlite.SqliteBackend)

        async def run(index: int) -> None:
            model = faux.FauxModel([faux.assistant_message(f"hello {index}")])
            state = pt.AgentState(model=model.model)
            async with store.open_agent(f"a{index}", initial_state=state, stream_fn=model) as a:
                await a.prompt("hi")

        before = backend.commits.batches
        async with trio.open_nursery() as nursery:
            for index in range(count * 10):
                nursery.start_soon(run, index)
        batches = backend.commits.batches - before
        for index in range(count * 10):
            kinds = [entry.kind for entry in await store.load(f"a{index}")]
            assert kinds[-2:] == ["message", "run_end"]
        # each agent has at least 3 durable points (prompt, answer, run end)
        assert batches < count * 10 * 3 / 2


async def test_a_tool_turn_commits_twice_its_result_message_riding_on_the_next(
    tmp_path: Path,
) -> None:
    """The tool-result message that its logged ``tool_result`` rebuilds is not committed on
    its own: it goes with the next assistant message's commit."""
    from pi_trio.providers import faux

    async def work(call_id: str, params: Any, on_update: Any) -> str:
        return "worked"

    tool = pt.AgentTool(
        name="work", label="work", description="work", parameters={"type": "object"},
        execute=work,
    )  # fmt: skip
    model = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("work", {}, id="c1")]),
            faux.assistant_message("ok"),
        ]
    )
    async with pt.open_session_store(tmp_path / "t.db") as store:
        backend = store.backend
        assert isinstance(backend, _sqlite.SqliteBackend)
        state = pt.AgentState(model=model.model, tools=[tool])
        async with store.open_agent("t", initial_state=state, stream_fn=model) as agent:
            before = backend.commits.batches
            await agent.prompt("go")
            commits = backend.commits.batches - before
        kinds = [entry.kind for entry in await store.load("t")]
    # the prompt; the calls with their intents; the result; the answer with the result
    # message; the run's end
    assert commits == 5
    assert kinds.count("message") == 4 and kinds[-1] == "run_end"


async def test_overlapping_flushes_of_one_agent_share_the_commit_in_flight(
    tmp_path: Path,
) -> None:
    """A flush that comes while the same agent's commit is in flight (the lease keeper's, a
    queue's, the loop's) waits for that commit instead of starting its own, and returns only
    once its entries are durable: one commit for both, and neither is left waiting."""
    from pi_trio.providers import faux

    model = faux.FauxModel([faux.assistant_message("ok")])
    async with pt.open_session_store(tmp_path / "f.db") as store:
        backend = store.backend
        assert isinstance(backend, _sqlite.SqliteBackend)
        state = pt.AgentState(model=model.model)
        async with store.open_agent("f", initial_state=state, stream_fn=model) as agent:
            recorder = agent.recorder
            assert recorder is not None
            agent.follow_up("later")  # noted, not yet committed
            inside, go_on = _hold_commits(backend)
            returned: list[list[str]] = []

            async def flush() -> None:
                await recorder.flush()
                returned.append(logged_kinds(tmp_path / "f.db", "f"))  # durable by then

            before = backend.commits.batches
            try:
                with trio.fail_after(10):  # a flush left waiting forever fails here
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(flush)
                        nursery.start_soon(flush)
                        assert await trio.to_thread.run_sync(inside.wait, 10)
                        await trio.testing.wait_all_tasks_blocked()
                        assert returned == []  # neither returns before the commit is done
                        go_on.set()
            finally:
                go_on.set()
            commits = backend.commits.batches - before
    assert commits == 1
    assert len(returned) == 2 and all("queued" in durable for durable in returned)


async def test_an_expired_lease_batched_with_its_successor_is_told_it_lost(
    postgres_url: str,
) -> None:
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url, lease_ttl=30) as store:
        backend = store.backend
        old = await backend.acquire("s", new_holder("old"))
        raw("UPDATE pi_trio_sessions SET lease_expires = 0")  # the old lease ran out
        new = await backend.acquire("s", new_holder("new"))
        assert not isinstance(old, str) and not isinstance(new, str)
        outcomes: dict[str, str] = {}

        async def append(name: str, lease: Lease, seq: int) -> None:
            try:
                await backend.append(lease, [(seq, "run_start", f'{{"who": "{name}"}}', 1, 1)])
                outcomes[name] = "committed"
            except pt.SessionBusyError:
                outcomes[name] = "lost"

        async with trio.open_nursery() as nursery:  # one batch: the same scheduler pass
            nursery.start_soon(append, "old", old, 1)
            nursery.start_soon(append, "new", new, 2)
        assert outcomes == {"old": "lost", "new": "committed"}
        assert [(e.seq, e.data["who"]) for e in await store.load("s")] == [(2, "new")]
