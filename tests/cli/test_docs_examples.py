"""The self-contained Python examples of the README and the docs' home page run as shown."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ._helpers import ROOT, env_without_keys

PAGES = ["README.md", "docs/index.md"]


def _runnable_blocks(page: str) -> list[str]:
    text = (ROOT / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    return [b for b in blocks if "trio.run(main)" in b]


@pytest.mark.parametrize("page", PAGES)
def test_the_example_runs(page: str) -> None:
    blocks = _runnable_blocks(page)
    assert blocks, f"{page} has no runnable example"
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block],
            capture_output=True,
            text=True,
            timeout=60,
            env=env_without_keys(),
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        assert "['user', 'assistant', 'toolResult'" in done.stdout
