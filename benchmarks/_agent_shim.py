"""TEMPORARY: a minimal stand-in for pt.Agent over pt.run_agent_loop until the Agent lands."""

from __future__ import annotations

from typing import Any

import attrs
import trio

import pi_trio as pt
from pi_trio.tools import AgentContext


@attrs.define
class AgentState:
    model: Any = None
    tools: Any = ()
    messages: list[Any] = attrs.field(factory=list)
    system_prompt: str = ""
    is_streaming: bool = False


class Agent:
    def __init__(
        self, initial_state: AgentState | None = None, *, stream_fn: Any = None, **kw: Any
    ) -> None:
        self.state = initial_state or AgentState()
        self._stream_fn = stream_fn
        self._options = kw.get("stream_options") or pt.StreamOptions()
        self._listeners: list[Any] = []
        self._scope: trio.CancelScope | None = None
        self._idle = trio.Event()
        self._idle.set()

    def subscribe(self, listener: Any) -> Any:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def send(self, event: Any) -> None:
        for listener in self._listeners:
            value = listener(event)
            if value is not None:
                await value

    async def prompt(self, text: str) -> None:
        self._idle = trio.Event()
        self.state.is_streaming = True
        context = AgentContext(self.state.system_prompt, self.state.messages, self.state.tools)
        config = pt.AgentLoopConfig(
            model=self.state.model, stream_fn=self._stream_fn, stream_options=self._options
        )
        try:
            with trio.CancelScope() as self._scope:
                await pt.run_agent_loop([pt.UserMessage(text)], context, config, self)
        finally:
            self.state.is_streaming = False
            self._scope = None
            self._idle.set()

    def abort(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def wait_for_idle(self) -> None:
        await self._idle.wait()
