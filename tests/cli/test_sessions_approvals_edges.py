"""``pi-trio sessions pending|approve|deny`` with a session id the store refuses: a one-line
error (status 2), not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.cli import main


@pytest.mark.parametrize("action", [["pending", ""], ["approve", "", "c1"], ["deny", "", "c1"]])
def test_an_empty_session_id_is_a_one_line_error(
    tmp_path: Path, action: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "s.db")

    async def make() -> None:
        async with pt.open_session_store(store) as opened, opened.open_agent("s"):
            pass

    trio.run(make)
    assert main(["sessions", "--store", store, *action]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pi-trio: error:") and "non-empty" in err
