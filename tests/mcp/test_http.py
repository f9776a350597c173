"""pi_trio.mcp against a real MCP server over streamable HTTP on 127.0.0.1, and against an HTTP
server that answers garbage."""

from __future__ import annotations

import functools
from pathlib import Path

import httpx2
import pytest
import trio

import pi_trio as pt

from .conftest import HttpServer, eventually, has_text

pytestmark = pytest.mark.slow  # real MCP HTTP servers

LIMIT = 30


async def test_calls_progress_and_abort_reach_the_server(
    http_server: HttpServer, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_http_server(http_server.url, headers={"X-Test": "1"}) as server:
            assert server.name == http_server.url
            tools = {tool.name: tool for tool in await server.tools(prefix="web")}
            added = await tools["web_add"].execute("c1", {"a": 1, "b": 2}, None)
            assert added.details == {"structured_content": {"total": 3, "terms": [1, 2]}}
            where = await server.call_tool("where", {"header": "x-test"})
            assert where.content[0].text.endswith("header=1")  # our header reached the server

            updates: list[pt.ToolResult] = []

            async def on_update(partial: pt.ToolResult) -> None:
                updates.append(partial)

            await tools["web_progress"].execute("c2", {"steps": 2}, on_update)
            assert len(updates) == 2

            with trio.move_on_after(LIMIT / 3) as scope:
                async with trio.open_nursery() as nursery:
                    hang = tools["web_hang"].execute
                    nursery.start_soon(hang, "c3", {"marker": str(marker)}, None)
                    await eventually(has_text(marker, "started"))
                    nursery.cancel_scope.cancel()
            assert not scope.cancelled_caught
            await eventually(has_text(marker, "cancelled"))  # the server saw the abort


async def test_an_expired_session_is_an_error_and_the_next_call_reinitializes(
    http_server: HttpServer,
) -> None:
    with trio.fail_after(LIMIT):
        # sessions belong to the 2025 protocol (the 2026 one is stateless): ask for it
        async with pt.mcp.open_http_server(http_server.url, mode="legacy") as server:
            await server.call_tool("echo", {"text": "one"})
            async with httpx2.AsyncClient() as http:
                (await http.post(f"http://127.0.0.1:{http_server.port}/expire")).raise_for_status()
            with pytest.raises(pt.mcp.McpServerError, match="session expired"):
                await server.call_tool("echo", {"text": "two"})
            again = await server.call_tool("echo", {"text": "three"})
            assert again.content == [pt.TextContent("echo: three")]
            assert server.connections_opened == 2


async def test_list_changed_over_a_2025_session(http_server: HttpServer) -> None:
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_http_server(http_server.url, mode="legacy") as server:
            await server.tools()
            await server.call_tool("grow")
            await eventually(lambda: server.tools_changed)
            assert "extra" in {tool.name for tool in await server.tools()}


async def test_a_server_that_went_down_is_an_error_then_reconnects(http_server: HttpServer) -> None:
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_http_server(http_server.url, name="web") as server:
            await server.call_tool("echo", {"text": "up"})
            http_server.stop()
            with pytest.raises(pt.mcp.McpServerError, match="MCP server 'web'"):
                await server.call_tool("echo", {"text": "down"})
            http_server.start()  # the same port
            back = await server.call_tool("echo", {"text": "up again"})
            assert back.content == [pt.TextContent("echo: up again")]
        http_server.stop()
        with pytest.raises(pt.mcp.McpServerError, match="could not connect"):
            async with pt.mcp.open_http_server(http_server.url):
                raise AssertionError("entered")


async def test_a_server_answering_garbage_fails_clearly() -> None:
    async def garbage(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        body = b"<html>not MCP</html>"
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"
        await stream.send_all(head % len(body) + body)

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                functools.partial(trio.serve_tcp, host="127.0.0.1"), garbage, 0
            )
            port = listeners[0].socket.getsockname()[1]
            with pytest.raises(pt.mcp.McpServerError, match="could not connect"):
                async with pt.mcp.open_http_server(f"http://127.0.0.1:{port}/mcp", name="junk"):
                    raise AssertionError("entered")
            nursery.cancel_scope.cancel()


class _CuttingProxy:
    """A TCP proxy to the test server whose ``cut()`` drops every connection through it, as a
    load balancer or a network does."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: list[trio.SocketStream] = []

    async def handle(self, client: trio.SocketStream) -> None:
        server = await trio.open_tcp_stream("127.0.0.1", self.port)
        self.streams += [client, server]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._pipe, client, server)
            nursery.start_soon(self._pipe, server, client)

    @staticmethod
    async def _pipe(source: trio.SocketStream, sink: trio.SocketStream) -> None:
        try:
            while data := await source.receive_some(65536):
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await sink.aclose()

    async def cut(self) -> None:
        streams, self.streams = self.streams, []
        for stream in streams:
            await stream.aclose()


async def test_tool_changes_are_heard_again_after_the_listen_stream_dropped(
    http_server: HttpServer, nursery: trio.Nursery
) -> None:
    proxy = _CuttingProxy(http_server.port)
    serve = functools.partial(trio.serve_tcp, proxy.handle, 0, host="127.0.0.1")
    [listener, *_] = await nursery.start(serve)
    url = f"http://127.0.0.1:{listener.socket.getsockname()[1]}/mcp"
    with trio.fail_after(LIMIT):
        async with pt.mcp.open_http_server(url, name="web") as server:  # the 2026 protocol
            await server.tools()
            await trio.sleep(0.5)  # its listen stream is open by now
            await proxy.cut()
            await eventually(lambda: server.tools_changed)  # lost: listing again is advised
            await trio.sleep(3)  # the stream is listened to again after 1 s
            for attempt in range(2):  # a pooled connection the cut closed may fail once
                try:
                    await server.tools()
                    await server.call_tool("grow")
                    break
                except pt.mcp.McpServerError:
                    if attempt:
                        raise
            await eventually(lambda: server.tools_changed)  # heard on the new stream
            assert "extra" in {tool.name for tool in await server.tools()}
            assert server.connections_opened == 1
