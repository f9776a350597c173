"""A full pt.Agent run (scripted model) with MCP tools: parallel calls, an abort mid-call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ..support import make_agent
from ..transcript import assert_transcript_valid
from .conftest import STDIO_ARGS, HttpServer, eventually, has_text

pytestmark = pytest.mark.slow  # real MCP server processes

LIMIT = 30


async def test_three_mcp_tools_in_parallel_then_an_abort_reaches_the_server(
    http_server: HttpServer, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    local_marker = tmp_path / "local-marker"
    script = [
        faux.assistant_message(  # barrier(n=3) answers only when all three are in flight
            [
                faux.tool_call("local_barrier", {"n": 3, "tag": "a"}),
                faux.tool_call("local_barrier", {"n": 3, "tag": "b"}),
                faux.tool_call("local_barrier", {"n": 3, "tag": "c"}),
            ]
        ),
        faux.assistant_message("all three passed"),
        faux.assistant_message(
            [
                faux.tool_call("web_echo", {"text": "quick"}),
                faux.tool_call("web_hang", {"marker": str(marker)}),
                faux.tool_call("local_hang", {"marker": str(local_marker)}),
            ]
        ),
        faux.assistant_message("never reached"),
    ]
    with trio.fail_after(LIMIT):
        async with (
            pt.mcp.open_stdio_server(sys.executable, STDIO_ARGS) as local,
            pt.mcp.open_http_server(http_server.url) as web,
        ):
            tools = [*await local.tools(prefix="local"), *await web.tools(prefix="web")]
            agent = make_agent(script, tools)

            await agent.prompt("pass the barrier three times at once")
            results = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
            assert [r.content[0].text for r in results] == ["a passed", "b passed", "c passed"]
            assert not any(r.is_error for r in results)

            echoed = trio.Event()

            def on_event(event: pt.AgentEvent) -> None:
                if isinstance(event, pt.ToolExecutionEnd) and event.tool_name == "web_echo":
                    echoed.set()

            agent.subscribe(on_event)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.prompt, "echo, then hang")
                await echoed.wait()
                await eventually(has_text(marker, "started"))  # the hangs run on the servers
                await eventually(has_text(local_marker, "started"))
                agent.abort()
            await eventually(has_text(marker, "cancelled"))  # both servers saw the abort:
            await eventually(has_text(local_marker, "cancelled"))  # HTTP and stdio

    messages = agent.state.messages
    assert_transcript_valid(messages, aborted=True)
    last_results = [m for m in messages[-5:] if isinstance(m, pt.ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in last_results] == [
        ("web_echo", False),
        ("web_hang", True),
        ("local_hang", True),
    ]
    assert [r.content[0].text for r in last_results[1:]] == [pt.tools.ABORTED_TOOL_TEXT] * 2
    assert messages[-1].stop_reason == "aborted"
