"""The process the compaction SIGKILL test kills: a durable session over the endless
``ReadingModel`` with compaction on, run until the test kills it.

``python -m tests.sessions._compaction_child STORE`` (from the checkout's root).
"""

from __future__ import annotations

import itertools
import sys

import attrs
import trio

import pi_trio as pt

from ..support import READ, ReadingModel


async def main(store_path: str) -> None:
    small = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=4_000)
    scripted = pt.faux.FauxModel(itertools.repeat(ReadingModel(turns=10**9)), model=small)
    settings = pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000)
    async with (
        pt.open_session_store(store_path) as store,
        store.open_agent(
            "long",
            initial_state=pt.AgentState(model=scripted.model, tools=[READ]),
            stream_fn=scripted,
            compaction=settings,
        ) as agent,
    ):

        async def slowly(event: pt.AgentEvent) -> None:
            if isinstance(event, pt.ToolExecutionEnd):
                await trio.sleep(0.002)  # the killer gets a chance between turns too

        agent.subscribe(slowly)
        await agent.prompt("read the files")


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
