"""``agent.compact()`` raises what a listener raised on a compaction event, as pi 1.6's
``compact()`` throws it: the transcript is unchanged when that was ``compaction_start``, and
the compacted one when it was ``compaction_end``; the agent is idle either way."""

from __future__ import annotations

import pytest

import pi_trio as pt

from .support import faux, make_scripted_agent


@pytest.mark.parametrize("event_type", ["compaction_start", "compaction_end"])
async def test_a_listener_failing_on_a_compaction_event_fails_compact(event_type: str) -> None:
    agent, _ = make_scripted_agent(
        [faux.assistant_message("hi"), faux.assistant_message("the summary")],
        (),
        compaction=pt.Compaction(keep_recent_tokens=1),
    )
    await agent.prompt("hello " * 50)
    before = list(agent.state.messages)

    def failing(event: pt.AgentEvent) -> None:
        if event.type == event_type:
            raise RuntimeError("a listener's bug")

    agent.subscribe(failing)
    with pytest.raises(RuntimeError, match="a listener's bug"):
        await agent.compact()
    assert not agent.is_running
    if event_type == "compaction_start":
        assert agent.state.messages == before
    else:
        assert isinstance(agent.state.messages[0], pt.CompactionSummary)
