"""A process that runs an approved ``refund`` and is killed inside it (after its intent is
durable, before its result): ``python -m tests.sessions._approval_crash_child URL SIDE``.

It opens the session of :mod:`._approval_child` (its refund approved already), continues it,
and the refund appends its side effect, prints ``RAN`` and sleeps (to be SIGKILLed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import trio

import pi_trio as pt

from ._approval_child import SESSION, options


def stuck_refund(side_effects: Path) -> pt.AgentTool:
    async def refund(tool_call_id: str, params: Any, on_update: Any) -> str:
        with side_effects.open("a") as out:
            out.write(f"{tool_call_id} {params['amount']}\n")
        print("RAN", flush=True)
        await trio.sleep_forever()
        return "unreachable"

    schema = {"type": "object", "properties": {"amount": {"type": "number"}}}
    return pt.AgentTool(
        "refund", "Refund", "refunds", schema, refund, requires_approval=True, replay="never"
    )


async def main(url: str, side_effects: str) -> None:
    made = options(Path(side_effects), resumed=True)
    made["initial_state"].tools = [stuck_refund(Path(side_effects))]
    async with (
        pt.open_session_store(url, lease_ttl=2.0) as store,
        store.open_agent(SESSION, wait=True, **made) as agent,
    ):
        await agent.continue_()


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:3])
