"""The processes of the crash test: one drives an agent until it is SIGKILLed, one resumes.

They run as children of a multiprocessing forkserver that has imported pi_trio already, so
each is a new process that starts in milliseconds. Side effects go to files with O_APPEND
writes, which a SIGKILL cannot tear: ``effects`` gets ``start``/``done`` lines from the tools,
``seen`` one line per ``message_end`` a listener was given (with the message's pi JSON).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

SCHEMA = {"type": "object", "properties": {"n": {"type": "number"}}}
NEVER = ("pay", "sync_pay")
SAFE = ("touch",)


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def tools(effects: str, seed: int) -> list[pt.AgentTool]:
    rng = random.Random(seed)

    def make(name: str) -> pt.AgentTool:
        if name == "sync_pay":

            def execute_sync(call_id: str, params: Any, on_update: Any) -> str:
                _append(effects, f"start {call_id} {name}")
                time.sleep(rng.uniform(0, 0.004))
                _append(effects, f"done {call_id} {name}")
                return f"{name} did {call_id}"

            execute: Any = execute_sync
        else:

            async def execute_async(call_id: str, params: Any, on_update: Any) -> str:
                _append(effects, f"start {call_id} {name}")
                await trio.sleep(rng.uniform(0, 0.004))
                _append(effects, f"done {call_id} {name}")
                return f"{name} did {call_id}"

            execute = execute_async
        return pt.AgentTool(
            name=name,
            label=name,
            description=name,
            parameters=SCHEMA,
            execute=execute,
            replay="safe" if name in SAFE else "never",
            # a batch with a sync_pay runs one call at a time: later calls have no intent yet
            execution_mode="sequential" if name == "sync_pay" else None,
        )

    return [make(name) for name in (*NEVER, *SAFE)]


def script(session: str, seed: int) -> list[pt.AssistantMessage]:
    rng = random.Random(seed)
    turns = []
    names = [*NEVER, *SAFE]
    for turn in range(4):
        picked = [rng.choice(names) for _ in range(3)]
        turns.append(
            faux.assistant_message(
                [faux.text(f"turn {turn} of {session}")]
                + [
                    faux.tool_call(name, {"n": i}, id=f"{session}-t{turn}-c{i}")
                    for i, name in enumerate(picked)
                ]
            )
        )
    turns.append(faux.assistant_message(f"all done for {session}"))
    turns.append(faux.assistant_message(f"follow-up answered for {session}"))
    return turns


def drive(db: str, session: str, effects: str, seen: str, seed: int) -> None:
    """Run one session to its end (unless killed first)."""

    async def main() -> None:
        scripted = faux.FauxModel(script(session, seed), token_delay=0.0005)
        state = pt.AgentState(model=scripted.model, tools=tools(effects, seed))
        async with (
            pt.open_session_store(db) as store,
            store.open_agent(session, initial_state=state, stream_fn=scripted) as agent,
        ):

            def listener(event: pt.AgentEvent) -> None:
                if isinstance(event, pt.MessageEnd):
                    _append(seen, json.dumps(pt.to_json(event.message)))

            agent.subscribe(listener)
            agent.follow_up(f"one more thing for {session}")
            await agent.prompt(f"start {session}")
        _append(seen, "FINISHED")

    trio.run(main)


def resume(db: str, session: str, effects: str, out: str, seed: int) -> None:
    """Resume the session, write its repaired transcript, then answer a new prompt."""

    async def main() -> dict[str, Any]:
        scripted = faux.FauxModel([faux.assistant_message("fresh answer")] * 4)
        state = pt.AgentState(model=scripted.model, tools=tools(effects, seed + 1))
        async with (
            pt.open_session_store(db) as store,
            store.open_agent(session, initial_state=state, stream_fn=scripted) as agent,
        ):
            repaired = [pt.to_json(m) for m in agent.state.messages]
            start = len(agent.state.messages)
            await agent.prompt("a new prompt")
            answers = [
                m.content[0].text  # type: ignore[union-attr]
                for m in agent.state.messages[start:]
                if isinstance(m, pt.AssistantMessage) and m.content
            ]
        return {"repaired": repaired, "answers": answers}

    Path(out).write_text(json.dumps(trio.run(main)))
