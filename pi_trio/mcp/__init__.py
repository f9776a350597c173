"""Tools from Model Context Protocol servers, under Trio's cancellation.

::

    async with pt.mcp.open_stdio_server("uvx", ["mcp-server-time"]) as time_server:
        agent.state.tools = await time_server.tools(prefix="time")
        await agent.prompt("What time is it in Lisbon?")

``open_stdio_server`` starts the server as a child process and talks MCP over its stdin/stdout;
``open_http_server`` talks to a streamable-HTTP endpoint. Each is an async context manager that
owns its tasks and child process: nothing it started outlives the block. See docs/mcp.md.

This package needs the official ``mcp`` SDK (``pip install 'pi-trio[mcp]'``). Importing
``pi_trio`` (or this package) does not import the SDK: the first use of a name below does,
and raises an ImportError naming the extra when it is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._server import (
        McpServer,
        McpServerError,
        McpToolError,
        open_http_server,
        open_stdio_server,
    )

__all__ = ["McpServer", "McpServerError", "McpToolError", "open_http_server", "open_stdio_server"]

INSTALL_HINT = "pip install 'pi-trio[mcp]'"


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'pi_trio.mcp' has no attribute {name!r}")
    try:
        importlib.import_module("mcp.client")
    except ImportError as exc:
        raise ImportError(
            f"pi_trio.mcp.{name} needs the MCP SDK, which is not installed: {INSTALL_HINT}"
        ) from exc
    server = importlib.import_module("._server", __name__)
    value = getattr(server, name)
    value.__module__ = __name__  # reprs and tracebacks say pi_trio.mcp.X
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
