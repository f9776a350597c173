"""A durable sub-agent survives a SIGKILL of the parent's process: resuming the parent re-runs
the interrupted call, which re-opens the child's own session and continues it, instead of
giving the call an "outcome unknown" result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pi_trio as pt
from pi_trio.subagents import RESUME_TEXT

from ._subagent_crash_child import CHILD_ANSWER

pytestmark = pytest.mark.slow  # two real processes, one killed with SIGKILL

ROOT = Path(__file__).resolve().parent.parent


def _phase(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests._subagent_crash_child", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_durable_child_resumes_its_session_after_the_parent_process_is_killed(
    tmp_path: Path,
) -> None:
    db, marker = str(tmp_path / "agents.db"), tmp_path / "started"
    running = _phase("run", db, str(marker))
    deadline = time.monotonic() + 60
    while not marker.exists():  # the child is inside its tool: mid-child
        assert running.poll() is None, running.communicate()
        assert time.monotonic() < deadline, "the child never started its tool"
        time.sleep(0.02)
    os.kill(running.pid, signal.SIGKILL)
    running.wait()

    resumed = _phase("resume", db, str(marker))
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    shown = json.loads(out)
    parent = [pt.from_json(m, pt.AgentMessage) for m in shown["parent"]]  # type: ignore[arg-type]
    child = [pt.from_json(m, pt.AgentMessage) for m in shown["child"]]  # type: ignore[arg-type]

    (result,) = [m for m in parent if isinstance(m, pt.ToolResultMessage)]
    assert (result.tool_call_id, result.is_error) == ("call_1", False)
    assert result.content == [pt.TextContent(CHILD_ANSWER)]  # not "outcome unknown"
    assert pt.testing.check_transcript(parent) == []
    # the child's session went on: its interrupted call repaired by its own policy, its run
    # closed, then resumed with RESUME_TEXT and answered
    roles = [(m.role, m.stop_reason if isinstance(m, pt.AssistantMessage) else None) for m in child]
    assert roles == [
        ("user", None),
        ("assistant", "toolUse"),
        ("toolResult", None),
        ("assistant", "aborted"),
        ("user", None),
        ("assistant", "stop"),
    ]
    assert child[2].details == {"interrupted": "outcome_unknown"}
    assert child[4].content == [pt.TextContent(RESUME_TEXT)]
    assert pt.testing.check_transcript(child) == []
    assert marker.read_text().splitlines() == ["started child_call_1"]  # never re-run
