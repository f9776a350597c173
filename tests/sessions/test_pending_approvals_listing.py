"""``store.pending_approvals()`` over a whole store: a session whose log cannot be read is left
out with a warning, not the end of the listing for every other session (asked for by name,
it is still an error); an inbox decision row that names no call does not break it either."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions._holders import new_holder

from .conftest import Raw


async def _refund(tool_call_id: str, params: dict[str, Any], on_update: Any) -> str:
    return "refunded"


async def _waiting_session(store: pt.SessionStore, session_id: str) -> None:
    tool = pt.AgentTool(
        "refund", "Refund", "Refund", {"type": "object"}, _refund, requires_approval=True
    )
    model = faux.FauxModel([faux.assistant_message([faux.tool_call("refund", {}, id="c1")])])
    state = pt.AgentState(model=model.model, tools=[tool])
    async with store.open_agent(session_id, initial_state=state, stream_fn=model) as agent:
        await agent.prompt("refund me")
        assert [c.id for c in agent.state.pending_approvals] == ["c1"]


async def test_an_unreadable_session_is_left_out_of_a_store_wide_listing(
    store_url: str, raw: Raw, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.sessions")
    async with pt.open_session_store(store_url) as store:
        await _waiting_session(store, "good")
        lease = await store.backend.acquire("bad", new_holder("w"))
        assert not isinstance(lease, str)
        await store.backend.append(lease, [(1, "telepathy", "{}", 1, 1)])
        await store.backend.release(lease)
        assert [(s, c.id) for s, c in await store.pending_approvals()] == [("good", "c1")]
        with pytest.raises(pt.SessionLogError, match="unknown entry kind"):
            await store.pending_approvals("bad")
    [warned] = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert warned.startswith("session 'bad': left out of the pending approvals")


async def test_an_inbox_decision_that_names_no_call_does_not_break_it(postgres_url: str) -> None:
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url) as store:
        await _waiting_session(store, "good")
        for data in ("[1]", '"c1"', "{}"):
            raw(
                "INSERT INTO pi_trio_inbox (session_id, kind, data, time) "
                "VALUES ('good', 'decision', ?::json, 0)",
                data,
            )
        assert [(s, c.id) for s, c in await store.pending_approvals()] == [("good", "c1")]
