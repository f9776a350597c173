"""The processes of the approval tests: a durable session whose ``refund`` tool needs a
person's approval and appends a line to a file each time it runs (its side effect).

``python -m tests.sessions._approval_child STORE_URL SIDE_EFFECTS MODE`` (from the checkout's
root), MODE one of:

- ``ask``: prompt; once the refund waits, print ``WAITING <call id>`` and sleep (to be killed);
- ``show``: open the session, print ``WAITING <ids>`` (its undecided calls), close it;
- ``hold``: open the session and wait until every waiting call is decided (a decision made
  from another process reaches it through its inbox), then continue; print ``DONE``;
- ``continue``: open the session, continue it, print ``DONE``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import trio

import pi_trio as pt

SESSION = "refunds"
REFUND_CALL = "refund_1"


def refund_tool(side_effects: Path) -> pt.AgentTool:
    def refund(tool_call_id: str, params: Any, on_update: Any) -> str:
        with side_effects.open("a") as out:
            out.write(f"{tool_call_id} {params['amount']}\n")
        return f"refunded {params['amount']}"

    schema = {"type": "object", "properties": {"amount": {"type": "number"}}}
    return pt.AgentTool("refund", "Refund", "refunds", schema, refund, requires_approval=True)


def model() -> pt.faux.FauxModel:
    """Asks for the refund, then answers (every process starts the script anew: the resumed
    ones only reach its answer)."""
    ask = pt.faux.assistant_message([pt.faux.tool_call("refund", {"amount": 250}, id=REFUND_CALL)])
    done = pt.faux.assistant_message("refund handled")
    return pt.faux.FauxModel([ask, done, done, done])


def options(side_effects: Path, resumed: bool) -> dict[str, Any]:
    scripted = model()
    if resumed:
        scripted = pt.faux.FauxModel([pt.faux.assistant_message("refund handled")] * 3)
    state = pt.AgentState(model=scripted.model, tools=[refund_tool(side_effects)])
    return {"initial_state": state, "stream_fn": scripted}


async def main(url: str, side_effects: str, mode: str) -> None:
    path = Path(side_effects)
    async with (
        pt.open_session_store(url, lease_ttl=2.0) as store,  # a killed holder's runs out soon
        store.open_agent(SESSION, wait=True, **options(path, mode != "ask")) as agent,
    ):
        if mode == "ask":
            await agent.prompt("refund order 17")
            waiting = " ".join(call.id for call in agent.state.pending_approvals)
            print(f"WAITING {waiting}", flush=True)
            await trio.sleep_forever()
        elif mode == "show":
            waiting = " ".join(call.id for call in agent.state.pending_approvals)
            print(f"WAITING {waiting}", flush=True)
        elif mode == "hold":
            print("HOLDING", flush=True)
            while agent.state.pending_approvals:  # noqa: ASYNC110 (another process decides)
                await trio.sleep(0.05)
            await agent.continue_()
            print("DONE", flush=True)
        else:
            await agent.continue_()
            print("DONE", flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:4])
