"""The sub-agents page's example runs as printed: a researcher whose two child agents run side
by side, their events shown as a tree, their findings and tokens rolled up."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import pi_trio as pt

EXAMPLE = Path(__file__).parents[1] / "docs" / "examples" / "subagents_researcher.py"


async def test_the_researcher_example_runs_two_children_side_by_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    researcher = await runpy.run_path(str(EXAMPLE))["main"]()
    lines = capsys.readouterr().out.splitlines()

    starts = [lines.index(f"  [{call}] agent_start") for call in ("r0", "r1")]
    ends = [lines.index(f"  [{call}] agent_end") for call in ("r0", "r1")]
    assert max(starts) < min(ends)  # both children were running at once
    answer = researcher.state.messages[-1]
    assert isinstance(answer, pt.AssistantMessage) and answer.stop_reason == "stop"
    assert "Finding on how Trio cancels a task" in lines[lines.index("Summary:") + 1]
    assert "Finding on how pi aborts a run" in lines[lines.index("Summary:") + 2]
    assert lines[-2:] == ["r0 spent 52 tokens", "r1 spent 52 tokens"]
