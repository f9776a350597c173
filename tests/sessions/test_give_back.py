"""How an ``open_agent`` block ends when its session was lost, or cannot be given back: the
caller always sees what ended the block, and a release that fails on top of it is one warning."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._helpers import calls, make_tool
from .conftest import Raw


def _waiting_tool() -> tuple[pt.AgentTool, trio.Event, trio.Event]:
    """A tool that says it started, then waits to be let go."""
    started, go = trio.Event(), trio.Event()

    async def wait(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        started.set()
        await go.wait()
        return pt.ToolResult([pt.TextContent("done")])

    return make_tool("wait", wait), started, go


async def test_a_takeover_found_by_a_commit_ends_the_block_with_session_busy(
    store_url: str, raw: Raw
) -> None:
    # another holder took the session while a tool ran (a holder paused past its lease): the
    # tool result's commit is refused, the run ends, and the block says so when it ends,
    # as open_agent promises, instead of ending as if all had been written
    tool, started, go = _waiting_tool()
    model = faux.FauxModel([calls("wait"), faux.assistant_message("never asked")])
    state = pt.AgentState(model=model.model, tools=[tool])
    async with pt.open_session_store(store_url) as store:
        with pytest.raises(pt.SessionBusyError, match="this holder lost it") as caught:
            async with store.open_agent("s", initial_state=state, stream_fn=model) as agent:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(agent.prompt, "go")
                    with trio.fail_after(10):
                        await started.wait()
                    raw("UPDATE pi_trio_sessions SET epoch = epoch + 1")  # taken over
                    go.set()
                assert agent.state.messages[-1].stop_reason == "error"
        assert type(caught.value) is pt.SessionBusyError  # plain, not in a group
        assert caught.value.session_id == "s"


async def test_a_release_that_fails_as_the_block_raises_is_one_warning(
    tmp_path: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    async with pt.open_session_store(str(tmp_path / "a.db")) as store:

        async def failing_release(lease: Any, *, idle: bool = False, give_up: bool = False) -> None:
            raise OSError("disk I/O error\nand a second line")

        monkeypatch.setattr(store.backend, "release", failing_release)
        with pytest.raises(ValueError, match="the block's own"):  # not the release's OSError
            async with store.open_agent("s"):
                raise ValueError("the block's own")
        with trio.CancelScope() as scope:
            async with store.open_agent("t"):
                scope.cancel()
                await trio.sleep_forever()
        assert scope.cancelled_caught  # the cancellation came out, not the OSError
        with pytest.raises(OSError, match="disk I/O error"):  # nothing else to report: raised
            async with store.open_agent("u"):
                pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"session {sid!r}: could not give it back either (OSError: disk I/O error); "
        "this process may open it again, others once this process ends"
        for sid in ("s", "t")
    ]
    assert all(r.exc_info is None for r in caplog.records)
