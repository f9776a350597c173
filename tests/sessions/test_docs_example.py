"""The runnable example of docs/sessions.md runs as shown, in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the many-agents page's example

ROOT = Path(__file__).resolve().parents[2]


def test_the_sessions_page_example_runs(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "sessions.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "trio.run" in b]
    assert len(blocks) == 2  # the first steps, and approvals
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "['user', 'assistant', 'toolResult', 'assistant', 'user', 'assistant']"
    assert lines[1].startswith("13 log entries:") and "tool_intent" in lines[1]


def test_the_approvals_example_runs(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "sessions.md").read_text()
    (block,) = [
        b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "requires_approval" in b
    ]
    done = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['refund']", "[('order-17', 'r1')]", "Refunded 250 EUR."]


def test_the_many_agents_page_example_runs(postgres_url: str, tmp_path: Path) -> None:
    text = (ROOT / "docs" / "many-agents.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "trio.run" in b]
    assert len(blocks) == 1
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PI_TRIO_STORE_URL": postgres_url},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"Noted: ticket {n}: the printer is on fire" for n in range(3)
    ]
