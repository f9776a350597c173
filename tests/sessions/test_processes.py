"""Several processes writing their own sessions into one store file at once."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.testing import check_transcript

pytestmark = pytest.mark.slow  # several processes sharing a store file

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys, time, trio, pi_trio as pt
from pi_trio.providers import faux
from tests.sessions._helpers import calls, make_tool

async def noop(call_id, params, on_update):
    return "ok"

async def main(path, session, start):
    script = [calls("noop", "noop", prefix=f"{session}-{turn}-") for turn in range(60)]
    model = faux.FauxModel([*script, faux.assistant_message("done")])
    state = pt.AgentState(model=model.model, tools=[make_tool("noop", noop)])
    async with pt.open_session_store(path) as store:
        async with store.open_agent(session, initial_state=state, stream_fn=model) as agent:
            await trio.sleep(max(0, float(start) - time.time()))  # all at once
            await agent.prompt("go")

trio.run(main, *sys.argv[1:])
"""


def test_processes_share_a_store_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    start = str(time.time() + 3)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{i}", start], cwd=ROOT)
        for i in range(3)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0]

    async def check() -> None:
        async with pt.open_session_store(path) as store:
            infos = await store.list_sessions()
            assert sorted(info.session_id for info in infos) == ["p0", "p1", "p2"]
            for info in infos:
                entries = await store.load(info.session_id)
                assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
                assert {e.epoch for e in entries} == {1}
                async with store.open_agent(info.session_id) as agent:
                    assert check_transcript(agent.state.messages) == []
                    assert len(agent.state.messages) == 1 + 60 * 3 + 1

    trio.run(check)
