"""A process driving a durable session that compacts is SIGKILLed after its log has compaction
entries; the session resumes with the compacted transcript the log describes (every entry kept,
the last compaction applied), valid for the model."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.testing import check_transcript

from ._helpers import gone_holder, transcript_json

pytestmark = pytest.mark.slow  # a real process, killed with SIGKILL

ROOT = Path(__file__).resolve().parents[2]


def _compactions(path: Path) -> int:
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        return int(
            db.execute("SELECT count(*) FROM pi_trio_entries WHERE kind = 'compaction'").fetchone()[
                0
            ]
        )
    except sqlite3.OperationalError:  # the tables are not made yet
        return 0
    finally:
        db.close()


def _expected(entries: list[Any]) -> list[Any]:
    """The transcript the log describes, folded here on its own: messages appended, each
    compaction entry making a summary followed by the messages it kept."""
    messages: list[Any] = []
    for entry in entries:
        if entry.kind == "message":
            messages.append(entry.data)
        elif entry.kind == "compaction":
            data = entry.data
            kept = messages[data["firstKept"] : data["firstKept"] + data["keptCount"]]
            summary = {
                "role": "compactionSummary",
                "summary": data["summary"],
                "tokensBefore": data["tokensBefore"],
                "timestamp": data["timestamp"],
            }
            messages = [summary, *kept]
    return messages


def test_sigkill_after_compactions_resumes_with_the_compacted_view(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.sessions._compaction_child", str(path)], cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 60
        while _compactions(path) < 3:
            assert child.poll() is None, "the session process ended by itself"
            assert time.monotonic() < deadline, "no compaction logged within a minute"
            time.sleep(0.01)
        time.sleep(0.05)  # somewhere mid-run, at whatever moment this lands
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    gone_holder(path)

    async def resume() -> tuple[list[Any], list[Any]]:
        async with pt.open_session_store(str(path)) as store:
            entries = await store.load("long")
            model = pt.get_model("faux", "faux-1")
            async with store.open_agent("long", initial_state=pt.AgentState(model=model)) as agent:
                return transcript_json(agent.state.messages), entries

    messages, entries = trio.run(resume)
    expected = _expected(entries)
    assert messages[0]["role"] == "compactionSummary"
    # what the log describes, then (when the kill fell mid-turn) pi's aborted close-out
    assert messages[: len(expected)] == expected
    resumed = [pt.from_json(m, pt.AgentMessage) for m in messages]  # type: ignore[arg-type]
    assert check_transcript(resumed[1:]) == []
    kinds = [e.kind for e in entries]
    assert kinds.count("message") > len(messages)  # the log kept what was summarised
