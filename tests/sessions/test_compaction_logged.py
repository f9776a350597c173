"""A durable session that compacts: the log keeps every entry and adds a ``compaction`` entry;
resuming gives the compacted transcript back; without the entry (a crash before it was
written) the session resumes uncompacted, having lost only the summary."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import attrs
import pytest

import pi_trio as pt
from pi_trio.cli import main
from pi_trio.providers import faux

from ..support import READ, ReadingModel
from ._helpers import gone_holder, snapshot, transcript_json

SETTINGS = pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000)


def _scripted(model: ReadingModel) -> faux.FauxModel:
    small = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=4_000)
    return faux.FauxModel(itertools.repeat(model), model=small)


async def _run_compacting(store_url: str, **options: Any) -> tuple[list[Any], list[Any]]:
    """A 20-turn session that compacts; its transcript (pi's JSON) and its log."""
    scripted = _scripted(ReadingModel(turns=20))
    state = pt.AgentState(model=scripted.model, tools=[READ])
    async with pt.open_session_store(store_url) as store:
        async with store.open_agent(
            "long", initial_state=state, stream_fn=scripted, compaction=SETTINGS, **options
        ) as agent:
            await agent.prompt("read the files")
            assert isinstance(agent.state.messages[0], pt.CompactionSummary)
            transcript = transcript_json(agent.state.messages)
        entries = await store.load("long")
    return transcript, entries


async def test_the_log_keeps_everything_and_resume_is_compacted(store_url: str) -> None:
    transcript, entries = await _run_compacting(store_url)
    kinds = [e.kind for e in entries]
    assert kinds.count("compaction") >= 2
    assert "transcript" not in kinds  # the compaction entries say it all
    # every message the run made is in the log, the summarised ones included
    logged = [e.data for e in entries if e.kind == "message"]
    assert len(logged) == 1 + 20 * 2 + 1  # prompt, 20 calls and results, the answer
    at = len(kinds) - 1 - kinds[::-1].index("compaction")  # the last compaction entry
    assert entries[at].data["summary"] == transcript[0]["summary"]
    after = kinds[at:].count("message")  # logged after it, in the compacted transcript
    assert entries[at].data["keptCount"] + after == len(transcript) - 1

    scripted = _scripted(ReadingModel(turns=0))
    async with pt.open_session_store(store_url) as store:
        async with store.open_agent(
            "long",
            initial_state=pt.AgentState(model=scripted.model, tools=[READ]),
            stream_fn=scripted,
            compaction=SETTINGS,
        ) as agent:
            assert transcript_json(agent.state.messages) == transcript
            await agent.prompt("and now?")  # goes on from the compacted view
            again = transcript_json(agent.state.messages)
        entries = await store.load("long")
    assert again[: len(transcript)] == transcript
    assert [e.kind for e in entries].count("transcript") == 0


async def test_a_crash_before_the_compaction_entry_loses_only_the_summary(
    tmp_path: Path,
) -> None:
    path, crash = tmp_path / "agents.db", tmp_path / "crash.db"
    scripted = _scripted(ReadingModel(turns=20))
    state = pt.AgentState(model=scripted.model, tools=[READ])
    before: list[Any] = []
    async with (
        pt.open_session_store(str(path)) as store,
        store.open_agent(
            "long", initial_state=state, stream_fn=scripted, compaction=SETTINGS
        ) as agent,
    ):

        def at_first_compaction(event: pt.AgentEvent) -> None:
            if isinstance(event, pt.CompactionStart) and not before:
                before.extend(transcript_json(agent.state.messages))
                snapshot(path, crash)  # what a crash while the summary is made leaves

        agent.subscribe(at_first_compaction)
        await agent.prompt("read the files")
    assert before
    gone_holder(crash)
    resumed = _scripted(ReadingModel(turns=0))
    async with (
        pt.open_session_store(str(crash)) as store,
        store.open_agent(
            "long",
            initial_state=pt.AgentState(model=resumed.model, tools=[READ]),
            stream_fn=resumed,
        ) as agent,
    ):
        messages = transcript_json(agent.state.messages)
    # the transcript as it was when the summary was asked for, closed in pi's aborted shape
    assert messages[: len(before)] == before
    assert all(m["role"] == "assistant" for m in messages[len(before) :])
    assert not any(m["role"] == "compactionSummary" for m in messages)


def test_sessions_show_marks_a_compaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import trio

    path = str(tmp_path / "agents.db")
    trio.run(_run_compacting, path)
    capsys.readouterr()
    assert main(["sessions", "--store", path, "show", "long"]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if "compaction" in line]
    assert shown and all("COMPACTED:" in line for line in shown)
    assert "summary 1" in shown[0]
