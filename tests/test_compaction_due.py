"""When compaction is due: the context's size is the last response's reported usage plus an
estimate of what came after it; behind a summary, a response from before that compaction
measured the old, longer context, so it is estimated instead. (Before: the next prompt after
a compaction compacted again at once.)"""

from __future__ import annotations

import attrs

import pi_trio as pt
from pi_trio.compaction import context_tokens, estimate_tokens

faux = pt.faux
WINDOW = 4_000
OLD = 1_000  # the kept messages' time: before the compaction


def answered(index: int, reported: int) -> list[pt.AgentMessage]:
    question = pt.UserMessage(f"question {index} " + "x" * 1_600, timestamp=OLD)  # ~400 tokens
    usage = pt.Usage(input=reported - 10, output=10, total_tokens=reported)
    answer = attrs.evolve(faux.assistant_message(f"answer {index}", usage=usage), timestamp=OLD)
    return [question, answer]


def test_a_response_older_than_the_summary_is_estimated() -> None:
    kept = answered(7, reported=3_810)
    summary = pt.CompactionSummary("what happened", 3_810, timestamp=OLD + 1)
    assert context_tokens(kept) == 3_810  # no compaction: the usage counts
    estimated = sum(estimate_tokens(m) for m in [summary, *kept])
    assert context_tokens([summary, *kept]) == estimated < 1_000
    newer = attrs.evolve(kept[1], timestamp=OLD + 2)  # answered after the compaction
    assert context_tokens([summary, kept[0], newer]) == 3_810


async def test_the_prompt_after_a_manual_compaction_does_not_compact_again() -> None:
    model = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=WINDOW)
    history = [m for index in range(8) for m in answered(index, reported=3_810)]
    scripted = faux.FauxModel(
        [faux.assistant_message("the summary"), faux.assistant_message("hello")], model=model
    )
    agent = pt.Agent(
        pt.AgentState(model=model, messages=history),
        stream_fn=scripted,
        compaction=pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000),
    )
    assert await agent.compact() is not None
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("hi")
    assert [e.type for e in events if e.type.startswith("compaction")] == []
    assert len(scripted.calls) == 2 and agent.state.messages[-1].content[0].text == "hello"
