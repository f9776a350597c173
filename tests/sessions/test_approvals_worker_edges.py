"""A session whose waiting calls were all decided but not yet run is work for a worker: it
is given back pending, not idle, so ``serve_sessions`` continues it (DESIGN 9.4)."""

from __future__ import annotations

from pathlib import Path

import trio

import pi_trio as pt

from ._approval_child import REFUND_CALL, SESSION, options


async def test_calls_decided_in_the_holder_and_not_run_are_continued_by_a_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    side = tmp_path / "side_effects"
    async with pt.open_session_store(postgres_url) as store:
        async with store.open_agent(SESSION, **options(side, resumed=False)) as agent:
            await agent.prompt("refund order 17")
            agent.approve(REFUND_CALL)  # and the block ends before continue_()
        (info,) = await store.list_sessions()
        assert info.pending  # a worker has something to do
        async with trio.open_nursery() as nursery:
            await nursery.start(pt.serve_sessions, store, options(side, resumed=True))
            with trio.fail_after(30):
                while not side.exists():  # noqa: ASYNC110 (the worker's work)
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert side.read_text().splitlines() == [f"{REFUND_CALL} 250"]
