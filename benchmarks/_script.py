"""The scripted model's answers and the two tools, for pi_trio (``BENCHMARKS.md``).

Every answer has a text part (streamed as 8 ``text_delta`` chunks by ``faux.in_pieces(8)``);
its tool calls follow, each as start, one delta with the JSON arguments, end.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

TEXT_PIECES = 8
FINAL_TEXT = "All done: the work is complete."

_ids = itertools.count()


def _call(name: str, arguments: dict[str, Any]) -> pt.ToolCall:
    return faux.tool_call(name, arguments, id=f"call_{next(_ids)}")


def tool_turn(name: str, arguments: list[dict[str, Any]], turn: int = 0) -> pt.AssistantMessage:
    """An answer whose text is followed by one call of ``name`` per item of ``arguments``."""
    blocks: list[pt.AssistantContent] = [faux.text(f"Turn {turn}: calling {name} now.")]
    blocks += [_call(name, args) for args in arguments]
    return faux.assistant_message(blocks)


def final_answer(value: str = FINAL_TEXT) -> pt.AssistantMessage:
    return faux.assistant_message(value)


def scripted(
    answers: Iterable[pt.AssistantMessage], chunker: faux.Chunker | None = None
) -> faux.FauxModel:
    # like the Node reference's scripted stream, it keeps no record of the requests
    pieces = chunker or faux.in_pieces(TEXT_PIECES)
    return faux.FauxModel(answers, chunker=pieces, token_delay=0.0, record_calls=False)


def noop_answers(turns: int) -> list[pt.AssistantMessage]:
    """``turns`` answers that each call ``noop`` once, then the final answer."""
    answers = [tool_turn("noop", [{}], turn) for turn in range(turns)]
    return [*answers, final_answer()]


def lazy_noop_answers(turns: int) -> Iterator[pt.AssistantMessage]:
    """S5's answers, each built when the agent's model is called (as the Node reference builds
    its message from a small descriptor at call time): 1,000-10,000 agents do not each hold
    eleven prebuilt messages from the start."""
    for turn in range(turns):
        yield tool_turn("noop", [{}], turn)
    yield final_answer()


_OK = pt.ToolResult([pt.TextContent("ok")], details={})


async def _noop(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return _OK


async def _sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    # Cooperative or not, in Trio this is trio.sleep: an uncooperative tool looks at nothing.
    await trio.sleep(params["ms"] / 1000)
    return _OK


NOOP = pt.AgentTool(
    name="noop",
    label="noop",
    description="Does nothing and returns at once.",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
    execute=_noop,
)

SLEEP = pt.AgentTool(
    name="sleep",
    label="sleep",
    description="Waits `ms` milliseconds; `cooperative` says whether it stops on abort.",
    parameters={
        "type": "object",
        "properties": {
            "ms": {"type": "number", "minimum": 0},
            "cooperative": {"type": "boolean"},
        },
        "required": ["ms", "cooperative"],
        "additionalProperties": False,
    },
    execute=_sleep,
)


def normalise(messages: list[pt.AgentMessage]) -> list[dict[str, Any]]:
    """pi_trio's transcript in the form ``_common.transcript_violations`` checks."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, pt.AssistantMessage):
            out.append(
                {
                    "role": "assistant",
                    "stopReason": message.stop_reason,
                    "toolCalls": [call.id for call in message.tool_calls],
                }
            )
        elif isinstance(message, pt.ToolResultMessage):
            out.append({"role": "toolResult", "toolCallId": message.tool_call_id})
        else:
            out.append({"role": getattr(message, "role", "custom")})
    return out
