"""``pi-trio chat --mcp "cmd args"`` / ``--mcp-url URL``: MCP servers' tools in the chat.

Each server's tools join the agent's own, prefixed ``mcp1_``, ``mcp2_``, ... in the order the
options were given, and are listed afresh when a server announced ``tools/list_changed``:
before a prompt, and within a run before its next model call (through the agent's
``prepare_next_turn``). The servers live for the whole chat (one ``open_*`` block each).
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import attrs

from .._callbacks import call_maybe_async
from ..agent import Agent
from ..loop import TurnContext, TurnUpdate
from ..tools import AgentTool
from ._models import CliError

__all__ = ["open_mcp_tools"]


@contextlib.asynccontextmanager
async def open_mcp_tools(
    agent: Agent, commands: Sequence[str], urls: Sequence[str]
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Open the servers and add their tools to ``agent``; yields ``refresh()``, to await
    before each prompt. Raises :class:`CliError` naming a server that cannot be used."""
    try:
        from .. import mcp
    except ImportError as exc:  # pragma: no cover - the package itself always imports
        raise CliError(str(exc)) from None
    own: list[AgentTool] = list(agent.state.tools)
    async with contextlib.AsyncExitStack() as stack:
        servers = []
        try:
            for command in commands:
                words = shlex.split(command)
                if not words:
                    raise CliError("--mcp needs a command, e.g. --mcp 'uvx mcp-server-time'")
                opened = mcp.open_stdio_server(words[0], words[1:], name=command)
                servers.append(await stack.enter_async_context(opened))
            for url in urls:
                servers.append(await stack.enter_async_context(mcp.open_http_server(url)))
        except (ImportError, mcp.McpServerError) as exc:
            raise CliError(str(exc)) from None
        listed: dict[int, list[AgentTool]] = {}

        async def refresh() -> None:
            for index, server in enumerate(servers, start=1):
                if index not in listed or server.tools_changed:
                    try:
                        listed[index] = await server.tools(prefix=f"mcp{index}")
                    except mcp.McpServerError as exc:  # keep the last list; say why
                        print(f"pi-trio: {exc}", file=sys.stderr)
                        listed.setdefault(index, [])
            agent.state.tools = [
                *own,
                *(tool for index in sorted(listed) for tool in listed[index]),
            ]

        async def between_turns(turn: TurnContext) -> TurnUpdate | None:
            update = await call_maybe_async(user_hook, turn) if user_hook is not None else None
            if not any(server.tools_changed for server in servers):
                return update
            await refresh()
            return attrs.evolve(update or TurnUpdate(), tools=agent.state.tools)

        user_hook = agent.prepare_next_turn
        agent.prepare_next_turn = between_turns
        await refresh()
        try:
            yield refresh
        finally:
            agent.prepare_next_turn = user_hook
