"""An MCP server on the official SDK's low-level ``Server`` (stdio), for how a client takes a
server's error answers. The MCP tests start it as a subprocess.

    python lowlevel_server.py [notools]   # notools: no tools capability (tools/list: -32601)

Tools: ``slow`` (answers once ``buggy`` has been called), ``buggy`` (its handler raises: the
SDK answers JSON-RPC -32603), ``answer`` (answers the JSON-RPC error ``code``/``message`` it is
given), ``counter`` (counts its calls in this process: the server's state).
"""

from __future__ import annotations

import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

_count = 0
_buggy_called = anyio.Event()
_ANY = {"type": "object"}
_NAMES = ("slow", "buggy", "answer", "counter")


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    tools = [types.Tool(name=name, description=name, input_schema=_ANY) for name in _NAMES]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    global _count
    arguments = params.arguments or {}
    if params.name == "slow":
        with anyio.fail_after(20):
            await _buggy_called.wait()
        return _text("slow done")
    if params.name == "buggy":
        _buggy_called.set()
        raise RuntimeError("a bug in one handler")
    if params.name == "answer":
        raise MCPError(code=int(arguments["code"]), message=str(arguments["message"]))
    _count += 1
    return _text(f"count={_count} pid={os.getpid()}")


async def main() -> None:
    if sys.argv[1:] == ["notools"]:
        server: Server[object] = Server("no-tools")
    else:
        server = Server("lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
