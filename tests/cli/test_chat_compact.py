"""``/compact`` in ``pi-trio chat``: the conversation's older part is summarised, and the chat
shows a line for it (also when there is nothing to compact)."""

from __future__ import annotations

import io
from typing import Any

import trio

import pi_trio as pt
from pi_trio.cli._agents import agent_factory
from pi_trio.cli._chat import ChatSession


async def _chat(agent: pt.Agent, lines: list[str]) -> str:
    out = io.StringIO()
    script = iter([*lines, "/quit"])

    async def read() -> str | None:
        await trio.lowlevel.checkpoint()
        return next(script)

    assert await ChatSession(agent, out=out, read_line=read).run(handle_signals=False) == 0
    return out.getvalue()


async def test_compact_summarises_the_older_part(autojump_clock: Any) -> None:
    answers = ["hi there", "fine, thanks", "more of it", "we greeted each other"]
    scripted = pt.faux.FauxModel([pt.faux.assistant_message(a) for a in answers])
    agent = pt.Agent(
        pt.AgentState(model=scripted.model),
        stream_fn=scripted,
        compaction=pt.Compaction(keep_recent_tokens=5),
    )
    text = await _chat(agent, ["hello", "how are you", "tell me more", "/compact the greetings"])
    assert "[compacting the conversation (manual)...]" in text
    assert "tokens of context summarised]" in text
    head = agent.state.messages[0]
    assert isinstance(head, pt.CompactionSummary) and head.summary == "we greeted each other"
    assert len(agent.state.messages) < 6
    prompt = scripted.calls[-1].context.messages[0].content
    assert isinstance(prompt, str) and prompt.endswith("the greetings")


async def test_a_failed_compaction_is_shown_and_changes_nothing(autojump_clock: Any) -> None:
    faux = pt.faux  # a model that answers the summary request with a tool call
    answers = [faux.assistant_message("hi"), faux.assistant_message("fine")]
    scripted = faux.FauxModel([*answers, faux.assistant_message([faux.tool_call("clock", {})])])
    agent = pt.Agent(
        pt.AgentState(model=scripted.model),
        stream_fn=scripted,
        compaction=pt.Compaction(keep_recent_tokens=5),
    )
    text = await _chat(agent, ["hello", "how are you", "/compact"])
    assert "[compaction failed: Summary request answered with a tool call]" in text
    assert [m.role for m in agent.state.messages] == ["user", "assistant"] * 2


async def test_compact_with_nothing_to_cut_says_so(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0.0)()
    text = await _chat(agent, ["hello", "/compact"])
    assert "[nothing to compact: the conversation is short enough]" in text
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
