"""A run's token and cost budgets bound the runs nested in its tools while it goes on, and
nothing once it has ended: an agent a tool starts in a service's nursery (whose task copies
the run's context) runs its own way after the run that started it is over."""

from __future__ import annotations

from typing import Any

import trio

import pi_trio as pt

from .support import faux

USAGE = pt.Usage(input=60, output=60, total_tokens=120)


def _noop_tool() -> pt.AgentTool:
    async def noop(tool_call_id: str, params: Any, on_update: Any) -> str:
        return "ok"

    return pt.AgentTool("noop", "Noop", "does nothing", {"type": "object"}, noop)


async def test_an_agent_started_by_a_tool_is_not_bounded_after_its_run_ended() -> None:
    background_model = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("noop", {}, id="b1")], usage=USAGE),
            faux.assistant_message([faux.tool_call("noop", {}, id="b2")], usage=USAGE),
            faux.assistant_message("the long job is done", usage=USAGE),
        ]
    )
    background = pt.Agent(
        pt.AgentState(model=background_model.model, tools=[_noop_tool()]),
        stream_fn=background_model,
    )
    front_ended = trio.Event()
    async with trio.open_nursery() as service:

        async def start_job(tool_call_id: str, params: Any, on_update: Any) -> str:
            async def job() -> None:
                await front_ended.wait()  # every turn of it after the front run
                await background.prompt("do the long job")

            service.start_soon(job)  # fire and forget: the task copies this context
            return "job started"

        front_model = faux.FauxModel(
            [
                faux.assistant_message([faux.tool_call("start_job", {}, id="f1")], usage=USAGE),
                faux.assistant_message("started it", usage=USAGE),
            ]
        )
        start = pt.AgentTool("start_job", "Start", "starts", {"type": "object"}, start_job)
        front = pt.Agent(
            pt.AgentState(model=front_model.model, tools=[start]),
            stream_fn=front_model,
            max_total_tokens=200,
        )
        await front.prompt("please start the job")
        front_ended.set()
    assert background.state.error_message is None
    last = background.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert last.content[0].text == "the long job is done"  # type: ignore[union-attr]
