"""Hostile input to ``pi-trio serve``: one client's line or failure never ends the others."""

from __future__ import annotations

import json
import logging
import re
import socket
import struct

import pytest
import trio

import pi_trio as pt
from pi_trio.cli._agents import agent_factory
from pi_trio.cli._rpc import serve_tcp_rpc

from ._helpers import JsonLinesClient, Process, is_type, rpc_session


def hostile_prompt(levels: int = 500) -> bytes:
    """A prompt whose message ``details`` nest ``levels`` arrays deep (about 1 KB)."""
    message = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "t",
        "content": [],
        "isError": False,
        "timestamp": 0,
        "details": "@",
    }
    line = json.dumps({"type": "prompt", "id": "hostile", "message": message})
    return line.replace('"@"', "[" * levels + "]" * levels).encode()


def test_a_deeply_nested_line_is_refused_and_serve_keeps_serving() -> None:
    proc = Process("serve", "--port", "0", "--delay", "0")
    try:
        proc.expect("listening on ")
        end = proc.expect("\n")
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", proc.text[:end])
        assert match, proc.text
        port = int(match.group(1))

        async def talk() -> None:
            hostile = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
            other = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
            assert (await other.command({"type": "get_state", "id": 1}))["success"]
            await hostile.send(hostile_prompt())
            refused = await hostile.response("hostile")
            assert refused["success"] is False
            assert refused["error"].startswith("message: details" + "[0]" * 64 + ": nested")
            # both connections are still served afterwards
            state = await hostile.command({"type": "get_messages", "id": 2})
            assert state["success"] and state["data"]["messages"] == []
            await other.command({"type": "prompt", "message": "what is 6 * 7?", "id": 3})
            events = await other.until(is_type("agent_end"))
            assert "42" in events[-1]["messages"][-1]["content"][0]["text"]
            await hostile.lines._stream.aclose()
            await other.lines._stream.aclose()

        trio.run(talk)
        assert proc.proc.poll() is None, proc.text  # the server is still running
    finally:
        proc.proc.terminate()
        proc.close()


async def test_a_failure_inside_one_connection_ends_that_connection_only(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    make_faux_agent = agent_factory("faux", token_delay=0)
    made = 0

    def make_agent() -> pt.Agent:
        nonlocal made
        made += 1
        if made == 2:
            raise RuntimeError("no agent for this one")
        return make_faux_agent()

    listeners = await nursery.start(serve_tcp_rpc, make_agent, 0, "127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    first = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    assert (await first.command({"type": "get_state", "id": 1}))["success"]

    caplog.set_level(logging.ERROR, logger="pi_trio.cli")
    failing = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    told = await failing.receive()
    assert told == {
        "type": "error",
        "error": "internal error: RuntimeError: no agent for this one; closing",
    }
    assert await failing.lines.receive_line() is None  # its connection is closed
    [record] = [r for r in caplog.records if r.name == "pi_trio.cli"]
    assert record.levelno == logging.ERROR and "failed; closing it" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)

    # the server goes on: the first connection and a new one are served
    await first.command({"type": "prompt", "message": "what is 6 * 7?", "id": 2})
    events = await first.until(is_type("agent_end"))
    assert "42" in events[-1]["messages"][-1]["content"][0]["text"]
    third = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    assert (await third.command({"type": "get_state", "id": 1}))["success"]
    for client in (first, failing, third):
        await client.lines._stream.aclose()


# --- a client that goes away mid-answer ----------------------------------------------------------


async def test_clients_that_reset_mid_answer_are_one_line_each_and_no_traceback(
    nursery: trio.Nursery,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG, logger="pi_trio")
    listeners = await nursery.start(serve_tcp_rpc, agent_factory("faux", token_delay=0.01), 0)
    port = listeners[0].socket.getsockname()[1]
    clients = 10
    for _ in range(clients):
        client = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
        await client.send(b'{"type": "prompt", "message": "tell me a long story"}')
        await client.until(is_type("message_update"))
        sock = client.lines._stream.socket
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await client.lines._stream.aclose()  # a reset, mid-answer
    with trio.fail_after(10):
        lines: list[str] = []
        while len(lines) < clients:
            await trio.sleep(0.05)
            lines += capsys.readouterr().err.splitlines()
    assert len(lines) == clients and all("the client went away" in line for line in lines)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []


async def test_rpc_whose_reader_went_away_ends_quietly(caplog: pytest.LogCaptureFixture) -> None:
    class HeadTwo:
        """stdout piped to ``head -2``: two lines, then a broken pipe."""

        def __init__(self) -> None:
            self.sent = 0
            self.prompted = False

        async def receive_line(self) -> bytes | None:
            if not self.prompted:
                self.prompted = True
                return b'{"type": "prompt", "message": "tell me a long story"}'
            await trio.sleep_forever()
            return None

        async def send_line(self, data: bytes) -> None:
            await trio.lowlevel.checkpoint()
            if self.sent == 2:
                raise BrokenPipeError(32, "Broken pipe")
            self.sent += 1

    caplog.set_level(logging.DEBUG, logger="pi_trio")
    agent = agent_factory("faux", token_delay=0.01)()
    session = rpc_session(agent, HeadTwo())
    with trio.fail_after(10):
        await session.run()
    assert isinstance(session.gone, BrokenPipeError)
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []
