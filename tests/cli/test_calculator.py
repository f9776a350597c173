"""The example calculator tool: arithmetic as Python does it, on numbers of bounded size.

An expression that would hold the process for seconds (and with it every ``serve`` connection,
since the work holds the GIL) is an error result instead, computed at once.
"""

from __future__ import annotations

from typing import Any

import pytest

import pi_trio as pt
from pi_trio.cli._tools import MAX_INT_BITS, example_tools
from pi_trio.providers import faux


class Events:
    def __init__(self) -> None:
        self.items: list[Any] = []

    async def send(self, event: Any) -> None:
        self.items.append(event)


async def calculate(*expressions: str) -> list[tuple[str, bool]]:
    """Each expression through the agent loop's ``calculate`` call: (result text, is_error)."""
    turns = [
        faux.assistant_message([faux.tool_call("calculate", {"expression": e}, id=f"c{i}")])
        for i, e in enumerate(expressions)
    ]
    scripted = faux.FauxModel([*turns, faux.assistant_message("done")])
    context = pt.AgentContext("sys", [], example_tools())
    events = Events()
    config = pt.AgentLoopConfig(model=scripted.model, stream_fn=scripted)
    await pt.run_agent_loop([pt.UserMessage("go")], context, config, events)
    ends = [e for e in events.items if isinstance(e, pt.ToolExecutionEnd)]
    return [(end.result.content[0].text, end.is_error) for end in ends]


HOSTILE = [
    "((9**999)**999)**999",  # over 20 s of one core before the bound
    "(9**999)*(9**999)*(9**999)*(9**999)",
    "10.0**400",
]


@pytest.mark.parametrize("expression", HOSTILE)
async def test_huge_numbers_are_an_error_result(expression: str) -> None:
    [(text, is_error)] = await calculate(expression)
    assert is_error
    assert f"number too large: the calculator works with at most {MAX_INT_BITS} bits" in text


async def test_normal_arithmetic_still_works() -> None:
    results = await calculate("(2 + 3) * 4", "7 // 2", "2 ** -1", "9**999 % 1000", "1 / 0")
    assert results[:4] == [("20", False), ("3", False), ("0.5", False), ("889", False)]
    assert results[4][1] and "division by zero" in results[4][0]
    [(big, is_error)] = await calculate("9**999")
    assert not is_error and len(big) == 954 and big == str(9**999)
