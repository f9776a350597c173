"""``pi-trio chat --mcp "cmd args"`` and ``--mcp-url URL``."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
import trio

import pi_trio as pt
from pi_trio.cli._mcp import open_mcp_tools
from pi_trio.providers import faux

from ..support import make_agent, make_scripted_agent
from .conftest import STDIO_ARGS, HttpServer

pytestmark = pytest.mark.slow  # the CLI and real MCP server processes

LIMIT = 30
COMMAND = shlex.join([sys.executable, *STDIO_ARGS])


def _names(agent: pt.Agent) -> set[str]:
    return {tool.name for tool in agent.state.tools}


async def test_servers_tools_join_the_agent_and_refresh_on_list_changed(
    http_server: HttpServer,
) -> None:
    agent = make_agent([], ())
    with trio.fail_after(LIMIT):
        async with open_mcp_tools(agent, [COMMAND], [http_server.url]) as refresh:
            assert {"mcp1_echo", "mcp2_echo"} <= _names(agent)
            assert "mcp1_extra" not in _names(agent)
            tools = {tool.name: tool for tool in agent.state.tools}
            await tools["mcp1_grow"].execute("c1", {}, None)
            while "mcp1_extra" not in _names(agent):  # once the announcement has arrived
                await trio.sleep(0.02)
                await refresh()
            assert "mcp2_extra" not in _names(agent)


def test_chat_with_mcp_options_starts_and_a_bad_server_is_a_clear_error(
    http_server: HttpServer,
) -> None:
    chat = [sys.executable, "-m", "pi_trio", "chat", "--model", "faux", "--delay", "0"]
    done = subprocess.run(
        [*chat, "--mcp", COMMAND, "--mcp-url", http_server.url],
        input="/quit\n", capture_output=True, text=True, timeout=LIMIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    bad = subprocess.run(
        [*chat, "--mcp", f"{sys.executable} -c pass"],
        input="/quit\n", capture_output=True, text=True, timeout=LIMIT,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "pi-trio: error: MCP server" in bad.stderr and "could not connect" in bad.stderr


async def test_a_list_changed_during_a_run_reaches_its_next_model_call() -> None:
    # the model calls grow (the server adds "extra" and announces it), then calls extra in the
    # same run: the tools were listed afresh before that second request
    agent, scripted = make_scripted_agent(
        [
            faux.assistant_message([faux.tool_call("mcp1_grow", {}, id="g")]),
            faux.assistant_message([faux.tool_call("mcp1_extra", {}, id="x")]),
            faux.assistant_message("done"),
        ],
        (),
    )
    with trio.fail_after(LIMIT):
        async with open_mcp_tools(agent, [COMMAND], []):
            assert "mcp1_extra" not in _names(agent)
            await agent.prompt("grow, then use the new tool")
    offered = [{tool.name for tool in call.context.tools} for call in scripted.calls]
    assert "mcp1_extra" not in offered[0] and "mcp1_extra" in offered[1]
    results = {
        m.tool_call_id: m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)
    }
    assert not results["x"].is_error, results["x"]
    assert agent.prepare_next_turn is None  # the block put the agent's own hook back
