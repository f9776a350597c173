"""The runnable example of docs/mcp.md runs as shown."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the page's example, with a real MCP server process

ROOT = Path(__file__).resolve().parents[2]


def test_the_mcp_page_example_runs() -> None:
    text = (ROOT / "docs" / "mcp.md").read_text()
    blocks = [
        b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "trio.run(main)" in b
    ]
    assert len(blocks) == 1
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "weather_forecast -> Lisbon: sunny, 24 C" in done.stdout
    assert "['user', 'assistant', 'toolResult', 'assistant']" in done.stdout
