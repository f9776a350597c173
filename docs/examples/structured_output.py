"""Ask a run for a typed result: an ``Invoice`` read from a customer's e-mail.

    python docs/examples/structured_output.py          # a scripted model, no key needed
    PI_TRIO_MODEL=anthropic/claude-haiku-4-5 python docs/examples/structured_output.py

The scripted model first gets an amount wrong ("twelve hundred"): the run sends pi's validation
error back, the model tries again, and ``agent.state.output`` is the ``Invoice`` it then gave.
"""

from __future__ import annotations

import os
from typing import Literal

import attrs
import trio

import pi_trio as pt
from pi_trio.providers import faux


@attrs.frozen
class LineItem:
    description: str
    amount: float = attrs.field(metadata={"description": "the amount, a number"})


@attrs.frozen
class Invoice:
    """The invoice the e-mail asks for."""

    number: str
    currency: Literal["EUR", "USD", "GBP"]
    lines: list[LineItem]


EMAIL = "Please bill invoice 2024-117: design work, 1200 euros; hosting, 80 euros."


def scripted_model() -> faux.FauxModel:
    """A model that gets one amount wrong, then answers correctly."""

    def call(amount: object) -> pt.AssistantMessage:
        arguments = {
            "number": "2024-117",
            "currency": "EUR",
            "lines": [
                {"description": "design work", "amount": amount},
                {"description": "hosting", "amount": 80},
            ],
        }
        return faux.assistant_message(faux.tool_call("final_result", arguments))

    return faux.FauxModel([call("twelve hundred"), call(1200)])


def make_agent() -> pt.Agent:
    """A real model from PI_TRIO_MODEL, else the scripted one."""
    state = pt.AgentState(system_prompt="You turn customers' e-mails into invoices.")
    spec = os.environ.get("PI_TRIO_MODEL")
    stream_fn = None
    if spec:
        provider, _, model_id = spec.partition("/")
        state.model = pt.get_model(provider, model_id)
    else:
        stream_fn = scripted_model()
        state.model = stream_fn.model
    return pt.Agent(state, stream_fn=stream_fn, output_type=Invoice, output_retries=2)


async def main() -> Invoice:
    agent = make_agent()
    await agent.prompt(EMAIL)
    invoice: Invoice | None = agent.state.output
    if invoice is None:  # the attempts were used up (or the request failed)
        raise SystemExit(f"no invoice: {agent.state.error_message}")
    print(invoice)
    print("total:", sum(line.amount for line in invoice.lines), invoice.currency)
    return invoice


if __name__ == "__main__":
    trio.run(main)
