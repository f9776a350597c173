"""The batch runs every call through ``AgentTool.run``: a subclass that overrides ``run`` has
its own ``run`` awaited."""

from __future__ import annotations

from typing import Any

import pi_trio as pt

from .support import faux, make_agent, tool_results


async def _execute(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("executed")])


class Wrapped(pt.AgentTool):
    """A tool whose ``run`` wraps ``execute`` (an application's own instrumentation, say)."""

    async def run(self, tool_call_id: str, params: Any, on_update: Any) -> Any:
        await super().run(tool_call_id, params, on_update)
        return pt.ToolResult([pt.TextContent("wrapped")])


async def test_a_subclass_that_overrides_run_has_its_run_awaited() -> None:
    tools = [
        Wrapped("wrapped", "w", "w", {"type": "object"}, _execute),
        pt.AgentTool("plain", "p", "p", {"type": "object"}, _execute),
    ]
    answer = faux.assistant_message(
        [faux.tool_call("wrapped", {}, id="c1"), faux.tool_call("plain", {}, id="c2")]
    )
    agent = make_agent([answer, faux.assistant_message("done")], tools)
    await agent.prompt("go")
    assert tool_results(agent.state.messages) == [
        ("c1", "wrapped", False),
        ("c2", "executed", False),
    ]
