"""``demo_agent``: the factory ``pi-trio stress --demo`` stresses (scripted model and tools).

No network, no key: the scripted model (``pt.faux``) streams two tool turns and a final
answer, each text in two pieces with a short pause before each; each tool turn calls three
tools in parallel (two 1 ms sleeps and a 1 ms lookup that reports progress through
``on_update``). Every agent gets the same script, so a run's seed and moment reproduce it.
"""

from __future__ import annotations

from typing import Any

import trio

from ..agent import Agent, AgentState
from ..events import ToolResult
from ..messages import AssistantContent, AssistantMessage, TextContent
from ..providers import faux
from ..tools import AgentTool

__all__ = ["demo_agent"]

TURNS = 2
PIECE_DELAY = 0.0002  # seconds before each streamed piece of text (two per text)
_SCHEMA = {
    "type": "object",
    "properties": {"ms": {"type": "number", "minimum": 0}},
    "required": ["ms"],
    "additionalProperties": False,
}


async def _sleep(tool_call_id: str, params: Any, on_update: Any) -> ToolResult:
    await trio.sleep(params["ms"] / 1000)
    return ToolResult([TextContent(f"slept {params['ms']} ms")])


async def _lookup(tool_call_id: str, params: Any, on_update: Any) -> ToolResult:
    await on_update(ToolResult([TextContent("looking")]))
    await trio.sleep(params["ms"] / 1000)
    return ToolResult([TextContent("found it")], details={"hits": 3})


SLEEP = AgentTool("sleep", "Sleep", "Waits `ms` milliseconds.", _SCHEMA, _sleep)
LOOKUP = AgentTool("lookup", "Lookup", "Looks something up in `ms` milliseconds.", _SCHEMA, _lookup)


def _script() -> list[AssistantMessage]:
    answers = []
    for turn in range(TURNS):
        blocks: list[AssistantContent] = [
            faux.text(f"Turn {turn}: let me check three things at once before I answer."),
            faux.tool_call("sleep", {"ms": 1}, id=f"t{turn}_a"),
            faux.tool_call("sleep", {"ms": 1}, id=f"t{turn}_b"),
            faux.tool_call("lookup", {"ms": 1}, id=f"t{turn}_c"),
        ]
        answers.append(faux.assistant_message(blocks))
    answers.append(faux.assistant_message("All done: every check came back fine."))
    return answers


def demo_agent() -> Agent:
    """A fresh agent on the scripted model with the demo's tools (``pi-trio stress --demo``)."""
    model = faux.FauxModel(_script(), chunker=faux.in_pieces(2), token_delay=PIECE_DELAY)
    state = AgentState(system_prompt="You are a demo.", model=model.model, tools=[SLEEP, LOOKUP])
    return Agent(state, stream_fn=model)
