"""Continue a transcript pi 1.6 wrote: its system messages, tool changes and unknown fields
are read, the model gets the prompt and tools they describe, and it writes back unchanged.

Run it: python docs/examples/pi16_transcript.py (no key, no network: a scripted model).
"""

from __future__ import annotations

import json

import trio

import pi_trio as pt

# What pi 1.6 keeps as a transcript: a leading system message (prompt and tools), then a later
# one that patches a section of the prompt and swaps a tool, and a field pi_trio does not model.
PI_JSON = [
    {"role": "system", "content": "You are a calculator.", "timestamp": 0,
     "toolsAdded": [{"name": "sum", "description": "Adds", "parameters": {"type": "object"}}]},
    {"role": "user", "content": [{"type": "text", "text": "2 + 3?"}], "timestamp": 1},
    {"role": "system", "content": "", "sections": {"style": "Answer briefly."}, "timestamp": 2,
     "toolsAdded": [{"name": "echo", "description": "Echoes", "parameters": {"type": "object"}}],
     "toolsRemoved": [{"name": "sum"}], "someNewerField": {"kept": True}},
]  # fmt: skip


async def main() -> None:
    messages = [pt.from_json(item, pt.AgentMessage) for item in PI_JSON]
    assert [pt.to_json(m) for m in messages] == PI_JSON  # nothing lost, nothing added

    prompt, tools = pt.current_system(messages)
    print("system prompt:", json.dumps(prompt))  # "You are a calculator.\n\nAnswer briefly."
    print("tools:", [tool.name for tool in tools])  # ['echo']

    model = pt.faux.FauxModel([pt.faux.assistant_message("5")])
    agent = pt.Agent(pt.AgentState(model=model.model, messages=messages), stream_fn=model)
    await agent.prompt("Go on.")
    print("answer:", agent.state.messages[-1].content[0].text)  # type: ignore[union-attr]
    # a request through a real wire API gets exactly that prompt and those tools
    request = pt.collapse_system_messages(model.calls[0].context)
    assert (request.system_prompt, [t.name for t in request.tools]) == (prompt, ["echo"])


if __name__ == "__main__":
    trio.run(main)
