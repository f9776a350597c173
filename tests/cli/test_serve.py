"""``pi-trio serve``: the rpc protocol over real TCP connections to 127.0.0.1."""

from __future__ import annotations

import re

import trio
import trio.testing

from pi_trio.cli._agents import agent_factory
from pi_trio.cli._rpc import serve_tcp_rpc

from ._helpers import JsonLinesClient, Process, is_text_delta, is_type


async def _start(nursery: trio.Nursery) -> int:
    make_agent = agent_factory("faux", token_delay=0.005)
    listeners = await nursery.start(serve_tcp_rpc, make_agent, 0, "127.0.0.1")
    host, port = listeners[0].socket.getsockname()[:2]
    assert host == "127.0.0.1"
    return int(port)


async def test_two_connections_get_two_agents_and_bad_input_is_answered(
    nursery: trio.Nursery,
) -> None:
    port = await _start(nursery)
    first = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    second = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    await first.command({"type": "prompt", "message": "what is 6 * 7?", "id": 1})
    events = await first.until(is_type("agent_end"))
    assert "42" in events[-1]["messages"][-1]["content"][0]["text"]

    bad = await second.command({"type": "prompt", "message": {"role": "user"}, "id": "bad"})
    assert bad["success"] is False and bad["error"].startswith("message: ")
    await second.send(b"{oops")
    assert "Failed to parse command" in (await second.receive())["error"]
    state = await second.command({"type": "get_messages", "id": 2})
    assert state["data"]["messages"] == []  # the second connection has its own agent
    state = await first.command({"type": "get_messages", "id": 3})
    assert len(state["data"]["messages"]) == 4
    await first.lines._stream.aclose()
    await second.lines._stream.aclose()


async def test_abort_over_tcp_and_a_vanished_client_does_not_stop_the_server(
    nursery: trio.Nursery,
) -> None:
    port = await _start(nursery)
    client = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    await client.command({"type": "prompt", "message": "tell me a long story", "id": 1})
    await client.until(is_text_delta)
    assert (await client.command({"type": "abort", "id": 2}))["success"]
    ended = [i for i in client.seen if i["type"] == "message_end"][-1]["message"]
    assert ended["stopReason"] == "aborted"

    # a client that disappears in the middle of a run
    gone = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    await gone.command({"type": "prompt", "message": "tell me a long story", "id": 1})
    await gone.until(is_text_delta)
    await gone.lines._stream.aclose()

    # the server still answers new and existing connections
    fresh = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    assert (await fresh.command({"type": "get_state", "id": 1}))["success"]
    await client.command({"type": "prompt", "message": "hello", "id": 3})
    events = await client.until(is_type("agent_end"))
    assert "hello" in events[-1]["messages"][-1]["content"][0]["text"]
    await client.lines._stream.aclose()
    await fresh.lines._stream.aclose()


def test_the_serve_command_listens_on_localhost_and_serves() -> None:
    proc = Process("serve", "--port", "0", "--delay", "0")
    try:
        proc.expect("listening on ")
        end = proc.expect("\n")
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", proc.text[:end])
        assert match, proc.text
        port = int(match.group(1))

        async def talk() -> list[dict]:
            client = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
            await client.command({"type": "prompt", "message": "what time is it?", "id": 1})
            events = await client.until(is_type("agent_end"))
            await client.lines._stream.aclose()
            return events

        events = trio.run(talk)
        assert events[-1]["messages"][2]["toolName"] == "clock"
    finally:
        proc.proc.terminate()
        proc.close()


async def test_serve_freezes_what_it_loaded_before_the_first_connection() -> None:
    # many connections, many agents: full collections must not walk the modules every time
    import gc

    from pi_trio.cli import _serve

    gc.unfreeze()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_serve, agent_factory("faux", token_delay=0), "127.0.0.1", 0)
            await trio.testing.wait_all_tasks_blocked()
            frozen = gc.get_freeze_count()
            nursery.cancel_scope.cancel()
    finally:
        gc.unfreeze()
    assert frozen > 1000
