"""A ``replay="safe"`` tool re-run when a session is taken over (its last run was cut while the
tool ran) keeps the new holder's lease renewed while it runs: a re-run longer than the lease
must not lose the session it was re-run for."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._helpers import calls, make_tool
from .conftest import Raw

pytestmark = pytest.mark.slow  # a lease of a second, outlived on the real clock


async def test_a_safe_re_run_longer_than_the_lease_keeps_the_session(postgres_url: str) -> None:
    raw = Raw("postgresql", postgres_url)
    started = trio.Event()
    runs: list[str] = []

    async def ensure(call_id: str, params: Any, on_update: Any) -> str:
        runs.append(call_id)
        if len(runs) == 1:  # the first holder's run: cut while the tool runs
            started.set()
            await trio.sleep_forever()
        await trio.sleep(2.5)  # the re-run: two and a half leases
        return f"ensured {call_id}"

    tools = [make_tool("ensure", ensure, replay="safe")]
    scripted = faux.FauxModel([calls("ensure"), faux.assistant_message("ok")])
    state = pt.AgentState(model=scripted.model, tools=tools)
    async with pt.open_session_store(postgres_url, lease_ttl=3) as store:
        with pytest.raises(pt.SessionBusyError):  # the first holder loses its lease mid-tool
            async with (
                store.open_agent("s", initial_state=state, stream_fn=scripted) as agent,
                trio.open_nursery() as nursery,
            ):
                nursery.start_soon(agent.prompt, "go")
                await started.wait()  # its intent is committed before the tool runs
                raw("UPDATE pi_trio_sessions SET lease_expires = 0")  # as if it had hung
    async with (
        pt.open_session_store(postgres_url, lease_ttl=1) as store,
        store.open_agent("s", initial_state=pt.AgentState(tools=tools)) as agent,
    ):
        result = agent.state.messages[-2]
    assert runs == ["c0", "c0"]
    assert isinstance(result, pt.ToolResultMessage) and not result.is_error
    assert result.content == [pt.TextContent("ensured c0")]
    assert raw("SELECT holder FROM pi_trio_sessions") == [(None,)]
