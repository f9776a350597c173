"""A durable session's compaction, where its log and its transcript could part: a message
appended while ``agent.compact()`` waits for its summary, and a transcript replaced just
before a ``compact()`` with no run between. Reopening gives back the live transcript.
(Before: the compaction entry named messages the log did not have, and the session could no
longer be opened.)"""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

import pi_trio as pt

from ..support import long_history

faux = pt.faux


async def _slow_summary(context: pt.Context, options: object, index: int) -> pt.AssistantMessage:
    await trio.sleep(1)
    return faux.assistant_message("the summary")


async def _reopened(store: pt.SessionStore) -> object:
    async with store.open_agent("s") as agent:
        return pt.to_json(agent.state.messages)


async def test_a_message_appended_during_a_durable_compaction(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    model = faux.FauxModel([_slow_summary])
    settings = pt.Compaction(keep_recent_tokens=1_000)
    state = pt.AgentState(model=model.model, messages=long_history())
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent(
            "s", initial_state=state, stream_fn=model, compaction=settings
        ) as agent:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.compact)
                await trio.testing.wait_all_tasks_blocked()
                agent.state.messages.append(pt.UserMessage("a late message"))
            assert isinstance(agent.state.messages[0], pt.CompactionSummary)
            live = pt.to_json(agent.state.messages)
        assert await _reopened(store) == live


async def test_a_transcript_replaced_just_before_a_compaction(tmp_path: Path) -> None:
    model = faux.FauxModel([faux.assistant_message("the summary")])
    settings = pt.Compaction(keep_recent_tokens=1_000)
    state = pt.AgentState(model=model.model)
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent(
            "s", initial_state=state, stream_fn=model, compaction=settings
        ) as agent:
            agent.state.messages = long_history()  # no run between: nothing logged it yet
            assert await agent.compact() is not None
            live = pt.to_json(agent.state.messages)
        assert await _reopened(store) == live
