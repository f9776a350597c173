"""While ``agent.compact()`` waits for its summary the transcript is the compaction's: replacing
it is refused (as during a run), and a message appended to it in place is kept after the
summary. (Before: the setter was accepted and then silently undone by the compaction, and an
appended message was lost.)"""

from __future__ import annotations

import trio
import trio.testing

import pi_trio as pt

from .support import long_history

faux = pt.faux


async def _compacting(agent: pt.Agent, during: object) -> pt.CompactionSummary | None:
    got: list[pt.CompactionSummary | None] = []

    async def compact() -> None:
        got.append(await agent.compact())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(compact)
        await trio.testing.wait_all_tasks_blocked()  # the summary request is out
        during(agent)  # type: ignore[operator]
    return got[0]


def agent_with_a_slow_summariser() -> pt.Agent:
    async def slow_summary(context: pt.Context, options: object, index: int) -> pt.AssistantMessage:
        await trio.sleep(1)
        return faux.assistant_message("the summary")

    model = faux.FauxModel([slow_summary])
    return pt.Agent(
        pt.AgentState(model=model.model, messages=long_history()),
        stream_fn=model,
        compaction=pt.Compaction(keep_recent_tokens=1_000),
    )


async def test_replacing_the_transcript_during_a_compaction_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = agent_with_a_slow_summariser()
    refused: list[Exception] = []

    def replace(agent: pt.Agent) -> None:
        try:
            agent.state.messages = [pt.UserMessage("a new conversation")]
        except pt.AgentBusyError as exc:
            refused.append(exc)

    summary = await _compacting(agent, replace)
    assert refused and "or a compaction replaces it" in str(refused[0])
    assert summary is not None and agent.state.messages[0] is summary
    agent.state.messages = [pt.UserMessage("a new conversation")]  # after it: fine


async def test_a_message_appended_during_a_compaction_is_kept(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = agent_with_a_slow_summariser()
    late = pt.UserMessage("a late message")
    summary = await _compacting(agent, lambda agent: agent.state.messages.append(late))
    assert summary is not None and agent.state.messages[-1] is late
