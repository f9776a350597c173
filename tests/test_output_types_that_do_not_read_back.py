"""An output type that cannot read back its own JSON (an attrs converter that changes a
field's type): the output is read back from its JSON by the run and by a resumed session, so
it cannot be kept; the model is not told "accepted", and the run's error names the real cause.
(Before: "Final result accepted." every time, then an error blaming an after_tool_call hook.)"""

from __future__ import annotations

import attrs

import pi_trio as pt

faux = pt.faux


def _split(value: object) -> object:
    return tuple(value.split(",")) if isinstance(value, str) else value


@attrs.frozen
class Ticket:
    title: str
    tags: str = attrs.field(converter=_split)  # its JSON is a list: not what it takes


async def test_the_error_names_the_output_type_not_a_hook() -> None:
    call = faux.assistant_message([faux.tool_call("final_result", {"title": "t", "tags": "a,b"})])
    model = faux.FauxModel([call, call, call])
    agent = pt.Agent(pt.AgentState(model=model.model), stream_fn=model, output_type=Ticket)
    await agent.prompt("file it")
    results = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
    assert results and all(r.is_error for r in results)
    assert "cannot read back its own JSON" in results[0].content[0].text
    assert agent.state.output is None
    error = agent.state.error_message or ""
    assert "cannot read back its own JSON" in error and "after_tool_call" not in error
