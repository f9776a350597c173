"""The processes of the durable sub-agent test: ``run`` drives a durable parent whose sub-agent
(a durable child session) blocks in a tool until the process is SIGKILLed; ``resume`` opens the
parent session again in a new process and prints both transcripts as pi's JSON.

Run as ``python -m tests._subagent_crash_child run|resume DB MARKER`` from the checkout.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

BLOCK_SCHEMA = {"type": "object", "properties": {}}
CHILD_ANSWER = "the child's answer, after the restart"


def _block_tool(marker: str) -> pt.AgentTool:
    async def block(call_id: str, params: Any, on_update: Any) -> str:
        fd = os.open(marker, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"started {call_id}\n".encode())
        os.close(fd)
        await trio.sleep_forever()  # the parent process is killed here
        raise AssertionError("unreachable")

    return pt.AgentTool("block", "Block", "waits for ever", BLOCK_SCHEMA, block)


async def main(phase: str, db: str, marker: str) -> None:
    if phase == "run":
        child_script = [faux.assistant_message([faux.tool_call("block", id="child_call_1")])]
    else:
        child_script = [faux.assistant_message(CHILD_ANSWER)]
    child_model = faux.FauxModel(child_script)
    parent_model = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("research", {"task": "find"}, id="call_1")]),
            faux.assistant_message("parent done"),
        ]
    )
    async with pt.open_session_store(db) as store:

        def child(tool_call_id: str, params: Any) -> Any:
            state = pt.AgentState(model=child_model.model, tools=[_block_tool(marker)])
            return store.open_agent(
                f"parent/{tool_call_id}", initial_state=state, stream_fn=child_model
            )

        research = pt.subagent_tool("research", "Researches a task", child)
        state = pt.AgentState(model=parent_model.model, tools=[research])
        async with store.open_agent("parent", initial_state=state, stream_fn=parent_model) as agent:
            if phase == "run":
                await agent.prompt("go")
                return
            parent_messages = [pt.to_json(m) for m in agent.state.messages]
        async with store.open_agent("parent/call_1", create=False) as child_agent:
            child_messages = [pt.to_json(m) for m in child_agent.state.messages]
    json.dump({"parent": parent_messages, "child": child_messages}, sys.stdout)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:4])
