"""Values a client can send that JSON or an ISO date cannot show, and a command that fails in
a way pi-trio did not expect: each gets an answer, the process and the session go on."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from pi_trio.cli._agents import agent_factory
from pi_trio.cli._lines import StreamLines
from pi_trio.cli._rpc import RpcSession
from pi_trio.cli._rpc_json import encode

from ._helpers import JsonLinesClient, is_type, rpc_session

HUGE_COST = {"input": 1e308, "output": 1e308, "cacheRead": 0, "cacheWrite": 0, "total": 1e308}


def _assistant(cost: dict[str, float]) -> dict[str, Any]:
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "api": "faux",
        "provider": "faux",
        "model": "faux-1",
        "usage": {**usage, "cost": cost},
        "stopReason": "stop",
        "timestamp": 1,
    }


@pytest.fixture
async def client(nursery: trio.Nursery) -> AsyncIterator[tuple[JsonLinesClient, RpcSession]]:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    session = rpc_session(agent_factory("faux", token_delay=0)(), StreamLines(server_stream))
    nursery.start_soon(session.run)
    yield JsonLinesClient(client_stream), session


def test_numbers_json_cannot_hold_are_written_as_null() -> None:
    assert encode({"id": float("inf"), "cost": [float("nan"), 1.5]}) == (
        b'{"id":null,"cost":[null,1.5]}'  # as JSON.stringify writes them
    )
    assert (
        encode({"text": "half \ud800", "n": -float("inf")}) == b'{"text":"half \\ud800","n":null}'
    )


async def test_session_stats_whose_cost_overflows_say_null(
    client: tuple[JsonLinesClient, RpcSession], autojump_clock: trio.testing.MockClock
) -> None:
    rpc, _ = client
    user = {"role": "user", "content": "hi", "timestamp": 1}
    history = [user, _assistant(HUGE_COST), user, _assistant(HUGE_COST), user]
    await rpc.command({"type": "prompt", "id": 1, "message": history})
    await rpc.until(is_type("agent_settled"))
    stats = await rpc.command({"type": "get_session_stats", "id": 2})
    assert stats["success"] and stats["data"]["cost"] is None
    assert (await rpc.command({"type": "get_state", "id": 3}))["success"]


async def test_a_timestamp_in_microseconds_does_not_break_the_entries(
    client: tuple[JsonLinesClient, RpcSession], autojump_clock: trio.testing.MockClock
) -> None:
    rpc, _ = client
    message = {"role": "user", "content": "hi", "timestamp": 1_796_430_084_234_000}
    await rpc.command({"type": "prompt", "id": 1, "message": message})
    await rpc.until(is_type("agent_settled"))
    entries = await rpc.command({"type": "get_entries", "id": 2})
    assert entries["success"], entries
    assert entries["data"]["entries"][0]["timestamp"] == "1970-01-01T00:00:00.000Z"


async def test_a_command_that_fails_unexpectedly_is_answered_and_logged_once(
    client: tuple[JsonLinesClient, RpcSession],
    caplog: pytest.LogCaptureFixture,
    autojump_clock: trio.testing.MockClock,
) -> None:
    rpc, session = client

    async def broken(command: dict[str, Any]) -> Any:
        raise RuntimeError("a bug in a handler")

    session._handlers["get_state"] = broken
    caplog.set_level(logging.ERROR, logger="pi_trio.cli")
    reply = await rpc.command({"type": "get_state", "id": 1})
    assert reply["success"] is False
    assert reply["error"] == "get_state failed inside pi-trio: RuntimeError: a bug in a handler"
    [record] = caplog.records
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
    assert (await rpc.command({"type": "get_messages", "id": 2}))["success"]


async def test_switching_to_an_id_no_store_keeps_is_refused(tmp_path: Any) -> None:
    from pi_trio.cli._rpc_sessions import SessionError, open_durable_sessions

    make_agent = agent_factory("faux", token_delay=0)
    async with open_durable_sessions(str(tmp_path / "s.db"), "first", make_agent) as sessions:
        with pytest.raises(SessionError, match="without NUL characters"):
            await sessions.switch_session("a\x00b")
        assert sessions.session_id == "first"


@pytest.mark.parametrize(
    ("ms", "iso"),  # what new Date(ms).toISOString() says, and the epoch past four digits
    [
        (-1, "1969-12-31T23:59:59.999Z"),
        (-86_400_000, "1969-12-31T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
        (1_796_430_084_234, "2026-12-05T00:21:24.234Z"),
        (253_402_300_800_000, "1970-01-01T00:00:00.000Z"),
        (1_796_430_084_234_000, "1970-01-01T00:00:00.000Z"),
    ],
)
def test_entry_times_are_javascripts_iso_times(ms: int, iso: str) -> None:
    from pi_trio.cli._rpc_sessions import _iso

    assert _iso(ms) == iso
