"""A researcher agent that hands two questions to two child agents running side by side.

    python docs/examples/subagents_researcher.py     # scripted models, no key needed

The researcher's tool ``research`` is a ``pt.subagent_tool``: each call runs a child agent on
the call's task, inside the call. The researcher's model asks for both at once, so the two
children run concurrently in the researcher's tool batch; their events reach the researcher's
subscriber as ``tool_execution_update`` events (printed below as a tree), their answers come
back as the calls' results, and their tokens count in the researcher's usage and budget.
Aborting the researcher (or its deadline) would stop both children where they are.

With a real model, give both agents ``pt.get_model(...)`` and no ``stream_fn``; the scripted
models here decide their answers from what they are sent, as a model would.
"""

from __future__ import annotations

from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

TOPICS = ("how Trio cancels a task", "how pi aborts a run")


def child_answer(context: pt.Context, options: Any, call_index: int) -> pt.AssistantMessage:
    """The child's scripted model: a one-line finding about the task it was given."""
    task = context.messages[-1].content[0].text  # type: ignore[union-attr]
    return faux.assistant_message(
        f"Finding on {task}: it is cooperative, at the next await.",
        usage=pt.Usage(input=40, output=12, total_tokens=52),
    )


def make_child(tool_call_id: str, params: dict[str, Any]) -> pt.Agent:
    """A fresh child agent per call (return ``store.open_agent(...)`` for a durable one)."""
    model = faux.FauxModel([child_answer])
    state = pt.AgentState(system_prompt="You research one question.", model=model.model)
    return pt.Agent(state, stream_fn=model)


def researcher_script() -> list[faux.FauxResponse]:
    """The researcher's scripted model: two parallel research calls, then a summary."""
    calls = [faux.tool_call("research", {"task": t}, id=f"r{i}") for i, t in enumerate(TOPICS)]

    def summary(context: pt.Context, options: Any, call_index: int) -> pt.AssistantMessage:
        found = [
            block.text
            for message in context.messages
            if isinstance(message, pt.ToolResultMessage)
            for block in message.content
            if isinstance(block, pt.TextContent)
        ]
        return faux.assistant_message("Summary:\n- " + "\n- ".join(found))

    return [faux.assistant_message(calls), summary]


def print_tree(event: pt.AgentEvent) -> None:
    """Show the researcher's events and, indented, its children's (their message ends)."""
    if isinstance(event, pt.ToolExecutionUpdate):
        forwarded = event.partial_result.details["subagent"]
        inner = forwarded["event"]
        if inner["type"] in ("agent_start", "agent_end", "message_end"):
            what = inner["type"]
            if inner["type"] == "message_end":
                what += f" ({inner['message']['role']})"
            print(f"{'  ' * forwarded['depth']}[{event.tool_call_id}] {what}")
    elif isinstance(event, pt.ToolExecutionStart | pt.ToolExecutionEnd):
        print(event.type, event.tool_call_id)


async def main() -> pt.Agent:
    research = pt.subagent_tool("research", "Researches one question and reports", make_child)
    model = faux.FauxModel(researcher_script())
    state = pt.AgentState(system_prompt="You research.", model=model.model, tools=[research])
    researcher = pt.Agent(state, stream_fn=model, max_total_tokens=10_000)
    researcher.subscribe(print_tree)
    await researcher.prompt("Compare how Trio and pi stop work in progress.")
    answer = researcher.state.messages[-1]
    assert isinstance(answer, pt.AssistantMessage)
    print(answer.content[0].text)  # type: ignore[union-attr]
    for message in researcher.state.messages:
        if isinstance(message, pt.ToolResultMessage) and message.usage is not None:
            print(f"{message.tool_call_id} spent {message.usage.total_tokens} tokens")
    return researcher


if __name__ == "__main__":
    trio.run(main)
