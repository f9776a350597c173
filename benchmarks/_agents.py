"""The pi_trio agents the scenarios run: built on the scripted model, counted by one subscriber."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux


class Counter:
    """The one subscriber: counts events (a plain function, so nothing is awaited)."""

    def __init__(self) -> None:
        self.events = 0
        self.first_tool_start = trio.Event()

    def listener(self) -> Callable[[Any], None]:
        def on_event(event: Any) -> None:
            self.events += 1

        return on_event

    def listener_watching_tools(self) -> Callable[[Any], None]:
        started = self.first_tool_start

        def on_event(event: Any) -> None:
            self.events += 1
            if event.type == "tool_execution_start" and not started.is_set():
                started.set()

        return on_event


def make_agent(model: pt.Model, tools: list[pt.AgentTool], **options: Any) -> pt.Agent:
    state = pt.AgentState(model=model, tools=tools)
    return pt.Agent(state, **options)


def scripted_agent(scripted: faux.FauxModel, tools: list[pt.AgentTool]) -> pt.Agent:
    return make_agent(scripted.model, tools, stream_fn=scripted)
