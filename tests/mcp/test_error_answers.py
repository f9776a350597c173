"""A server's error answer fails the request it answers, never the connection: calls in
flight go on and the server keeps its state. Only a transport that ended (or an HTTP session
that expired) closes the connection. A real server on the SDK's low-level ``Server``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt

from .conftest import HttpServer

pytestmark = pytest.mark.slow  # a real MCP server process per test

LIMIT = 30  # seconds: real subprocesses, so a bound instead of a mock clock
SERVER = str(Path(__file__).parent / "servers" / "lowlevel_server.py")


def _text(result: pt.ToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


async def test_a_failing_handler_fails_its_call_alone() -> None:
    results: dict[str, Any] = {}
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_stdio_server(sys.executable, [SERVER], name="low") as server:
            first = _text(await server.call_tool("counter"))

            async def call(name: str) -> None:
                try:
                    results[name] = _text(await server.call_tool(name))
                except pt.mcp.McpServerError as exc:
                    results[name] = str(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "slow")  # answers once buggy has been called
                await trio.sleep(0.2)
                nursery.start_soon(call, "buggy")
            second = _text(await server.call_tool("counter"))
            assert server.connections_opened == 1
    assert results == {
        "slow": "slow done",
        "buggy": "MCP server 'low': tool 'buggy' failed: Internal server error (MCP error -32603)",
    }
    assert first.startswith("count=1 ") and second == first.replace("count=1", "count=2")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32000, "Connection closed by the upstream API"),
        (-32600, "no browser session open"),
        (-32700, "the upstream sent garbage"),
        (-32001, "the upstream timed out"),
    ],
)
@pytest.mark.parametrize("limit", [None, 60.0])
async def test_codes_a_server_answers_with_are_that_calls_error(
    code: int, message: str, limit: float | None
) -> None:
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_stdio_server(sys.executable, [SERVER], name="low") as server:
            arguments = {"code": code, "message": message}
            with pytest.raises(pt.mcp.McpServerError) as caught:
                await server.call_tool("answer", arguments, timeout=limit)
            assert str(caught.value) == (
                f"MCP server 'low': tool 'answer' failed: {message} (MCP error {code})"
            )
            assert _text(await server.call_tool("counter")).startswith("count=1 ")
            assert server.connections_opened == 1


async def test_a_server_without_tools_lists_none_and_stays_connected() -> None:
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_stdio_server(sys.executable, [SERVER, "notools"]) as server:
            assert await server.tools() == []
            assert await server.tools() == []
            assert server.connections_opened == 1


RAW = str(Path(__file__).parent / "servers" / "raw_server.py")


async def test_a_line_that_is_not_utf8_does_not_wedge_the_connection() -> None:
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_stdio_server(sys.executable, [RAW, "latin1"], name="raw") as server:
            for n in range(3):
                result = await server.call_tool("echo", {"text": str(n)}, timeout=None)
                assert _text(result) == f"echo: {n}"
            assert server.connections_opened == 1


async def test_tools_pi_trio_cannot_offer_are_left_out_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="pi_trio.mcp")
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_stdio_server(
            sys.executable, [RAW, "odd_tools"], name="raw"
        ) as server:
            tools = await server.tools(prefix="r")
            names = [tool.name for tool in tools]
            assert names == ["r_echo", "r_files_read", "r_get_file", "r_put_file"]
            read = await tools[1].execute("c1", {"text": "x"}, None)  # the server's own name
            assert _text(read) == "echo: x"
            got = await tools[2].execute("c2", {"text": "y"}, None)  # the exact name's tool
            assert _text(got) == "echo: get_file y"
            put = await tools[3].execute("c3", {"text": "z"}, None)  # its rival was left out
            assert _text(put) == "echo: put.file z"
    why = {r.getMessage().split(": its tool ")[1] for r in caplog.records}
    assert why == {  # each page lists them all: the second, same cursor again, is the last
        "'broken' is left out of the agent's tools: invalid tool parameters schema: 'no' is "
        "not valid under any of the given schemas",
        "'greet' is left out of the agent's tools: invalid tool parameters schema: "
        "'^\\\\p{L}+$' is not a 'regex'",
        "'echo' is left out of the agent's tools: another of its tools is named 'r_echo'",
        "'files.read' is left out of the agent's tools: another of its tools is named "
        "'r_files_read'",
        "'get.file' is left out of the agent's tools: another of its tools is named 'r_get_file'",
        "'get_file' is left out of the agent's tools: another of its tools is named 'r_get_file'",
        "'put_file' is left out of the agent's tools: invalid tool parameters schema: 1 is not "
        "valid under any of the given schemas",
        "'' is left out of the agent's tools: a tool needs a name",
        "'put.file' is left out of the agent's tools: another of its tools is named 'r_put_file'",
    }
    assert len(caplog.records) == 6 + 10  # two pages, not a hundred


async def test_leaving_the_block_during_a_reconnection_does_not_wait_for_it(
    tmp_path: Path,
) -> None:
    env = {"RAW_STARTED": str(tmp_path / "started")}
    with trio.fail_after(LIMIT):
        opened = pt.mcp.open_stdio_server(
            sys.executable, [RAW, "restart_hangs"], env=env, connect_timeout=3600
        )
        async with opened as server:
            with pytest.raises(pt.mcp.McpServerError, match="the next call reconnects"):
                await server.call_tool("echo", {"text": "x"})  # the server exits
            with trio.move_on_after(0.5) as gave_up:  # the restarted server never answers
                await server.call_tool("echo", {"text": "y"})
            assert gave_up.cancelled_caught
        # left at once: not after connect_timeout


async def test_a_session_end_the_server_never_answers_is_cut_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pi_trio.mcp import _connection

    monkeypatch.setattr(_connection, "CLOSE_TIMEOUT", 0.5)
    monkeypatch.setenv("PI_TRIO_TEST_HANG_DELETE", "1")
    http = HttpServer()
    try:
        with trio.fail_after(LIMIT):  # before: httpx's read timeout, 300 s
            async with pt.mcp.open_http_server(http.url, mode="legacy") as server:
                result = await server.call_tool("echo", {"text": "hi"})
                assert _text(result) == "echo: hi"
    finally:
        http.stop()
