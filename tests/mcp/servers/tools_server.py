"""A FastMCP-style test server (mcp 2's ``MCPServer``) the MCP tests start as a subprocess.

    python tools_server.py stdio
    python tools_server.py http [PORT]   # binds 127.0.0.1:PORT (0: any), prints "PORT <n>"

``PI_TRIO_TEST_PID_FILE``: where the process writes its pid (to check it is gone afterwards).

Tools: ``echo``, ``where`` (cwd and a request header), ``add`` (structured output), ``fail``
(an error result), ``hang`` (waits until cancelled, then writes "cancelled" to ``marker``),
``progress`` (streams progress), ``image``,
``barrier`` (answers once ``n`` calls are in flight at once: proves parallel calls), ``crash``
(the process exits mid-call), ``grow`` (adds the tool ``extra`` and announces tools/list_changed).
``POST /expire`` (HTTP only) forgets every session, as a server whose sessions expired does.
``PI_TRIO_TEST_HANG_DELETE`` (HTTP only): a session's DELETE is never answered.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

server = MCPServer("pi-trio-test")
_arrived = 0
_all_arrived = anyio.Event()


class Sum(BaseModel):
    total: int
    terms: list[int]


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Where the server runs: its working directory, a request header.")
def where(header: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return f"cwd={os.getcwd()} header={headers.get(header)}"


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> Sum:
    return Sum(total=a + b, terms=[a, b])


@server.tool(description="Always fails with the given message.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Wait until cancelled; then write 'cancelled' to the marker file.")
async def hang(marker: str) -> str:
    Path(marker).write_text("started")  # noqa: ASYNC240 - a test server; tiny files
    try:
        await anyio.sleep_forever()
    finally:
        Path(marker).write_text("cancelled")  # noqa: ASYNC240
    return "never"


@server.tool(description="Report progress `steps` times, then answer.")
async def progress(steps: int, ctx: Context) -> str:
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"{steps} steps done"


@server.tool(description="Return a 1x1 PNG and a caption.", structured_output=False)
def image() -> list[object]:
    return ["a red dot", Image(data=PNG, format="png")]


@server.tool(description="Answer once `n` barrier calls are in flight at the same time.")
async def barrier(n: int, tag: str) -> str:
    global _arrived
    _arrived += 1
    if _arrived >= n:
        _all_arrived.set()
    with anyio.fail_after(20):
        await _all_arrived.wait()
    return f"{tag} passed"


@server.tool(description="Exit the server process in the middle of the call.")
async def crash() -> str:
    await anyio.sleep(0.05)
    os._exit(3)


@server.tool(description="Add the tool 'extra' and announce the change.")
async def grow(ctx: Context) -> str:
    server.add_tool(lambda: "extra!", name="extra", description="Added by grow.")
    await ctx.notify_tools_changed()  # 2026-era clients: their subscriptions/listen stream
    await ctx.request_context.session.send_tool_list_changed()  # 2025-era: a notification
    return "grown"


@server.custom_route("/expire", methods=["POST"])
async def expire(request: Request) -> Response:
    manager = server.session_manager
    for session_id, transport in list(manager._server_instances.items()):
        await manager._discard_session(session_id, transport)
    return JSONResponse({"expired": True})


def _hanging_deletes(app: Any) -> Any:
    async def hanging(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":
            await anyio.sleep_forever()
        await app(scope, receive, send)

    return hanging


def main() -> None:
    pid_file = os.environ.get("PI_TRIO_TEST_PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 0))
    sock.listen()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    if os.environ.get("PI_TRIO_TEST_HANG_DELETE"):  # a session's end that is never answered
        app = _hanging_deletes(app)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
