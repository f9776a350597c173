"""Compaction never cuts a system message off: the system messages before the cut (the system
prompt pi >= 0.86 puts at the head of every transcript, later changes to it and to the tools)
stay, in order, right after the summary, so the model keeps its prompt and its tools. A
durable session's log says which it kept, and resume gives them back. (Before: the first
compaction left the model with no system prompt and no tools.)"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import attrs

import pi_trio as pt
from pi_trio.system_messages import current_system

from .support import READ, ReadingModel

faux = pt.faux
SETTINGS = pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000)
ORDERS = pt.Tool("lookup_order", "Look up an order", {"type": "object"})


def scripted() -> tuple[faux.FauxModel, ReadingModel]:
    small = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=4_000)
    reading = ReadingModel(turns=20)
    return faux.FauxModel(itertools.repeat(reading), model=small), reading


def system_head() -> list[Any]:
    return [
        pt.SystemMessage("You are ACME's support agent.", tools_added=[ORDERS]),
        pt.SystemMessage("", sections={"tone": "Be brief."}),
    ]


def seen_by_the_model(messages: list[Any]) -> tuple[str, list[str]]:
    prompt, tools = current_system(messages)
    return prompt, [tool.name for tool in tools]


async def test_the_system_messages_before_the_cut_stay_after_the_summary() -> None:
    model, reading = scripted()
    head = system_head()
    agent = pt.Agent(
        pt.AgentState(model=model.model, tools=[READ], messages=list(head)),
        stream_fn=model,
        compaction=SETTINGS,
    )
    await agent.prompt("read the files")
    messages = agent.state.messages
    assert isinstance(messages[0], pt.CompactionSummary)
    assert messages[1:3] == head  # the same messages, in order, kept through every compaction
    assert seen_by_the_model(messages) == seen_by_the_model(head)
    assert seen_by_the_model(messages) == (
        "You are ACME's support agent.\n\nBe brief.",
        ["lookup_order"],
    )
    assert len(reading.summary_requests) >= 2
    summarised = " ".join(str(c.messages) for c in reading.summary_requests)
    assert "ACME" not in summarised  # kept, so not summarised


async def test_resume_gives_the_kept_system_messages_back(tmp_path: Path) -> None:
    model, _ = scripted()
    head = system_head()
    state = pt.AgentState(model=model.model, tools=[READ], messages=list(head))
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent(
            "s", initial_state=state, stream_fn=model, compaction=SETTINGS
        ) as agent:
            await agent.prompt("read the files")
            live = pt.to_json(agent.state.messages)
        entries = await store.load("s")
        assert any("systemKept" in e.data for e in entries if e.kind == "compaction")
        async with store.open_agent("s", stream_fn=model) as resumed:
            assert pt.to_json(resumed.state.messages) == live
            assert seen_by_the_model(resumed.state.messages) == seen_by_the_model(head)
