"""``pi-trio chat``: an interactive session in the terminal, streaming, with example tools.

Ctrl-C while the agent is answering aborts that run (the transcript keeps the partial answer,
marked aborted) and returns to the prompt; Ctrl-C at the prompt, ``/quit`` or end of input
(Ctrl-D) exits. SIGINT is taken with ``trio.open_signal_receiver`` for the whole session, so it
never arrives as a ``KeyboardInterrupt`` in the middle of a run.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

import trio

from ..agent import Agent
from ._render import EventPrinter, Style, wants_color

__all__ = ["ChatSession", "read_stdin_line"]

HELP = "commands: /reset forgets the conversation, /quit exits (so do Ctrl-D and Ctrl-C here)"


async def read_stdin_line() -> str | None:
    """The next line typed on stdin without its newline, or None at end of input."""
    line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    return line.rstrip("\r\n") if line else None


class ChatSession:
    """One chat: reads lines, runs each as a prompt, handles Ctrl-C as described above."""

    def __init__(
        self,
        agent: Agent,
        *,
        out: TextIO | None = None,
        read_line: Callable[[], Awaitable[str | None]] = read_stdin_line,
        echo_input: bool | None = None,
        before_prompt: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.agent = agent
        self.before_prompt = before_prompt  # e.g. refresh MCP tools
        self.out = out if out is not None else sys.stdout
        self.style = Style(wants_color(self.out))
        self.printer = EventPrinter(self.out, self.style)
        self.printer.show_user_messages = False
        self.read_line = read_line
        self.echo_input = (not sys.stdin.isatty()) if echo_input is None else echo_input
        self.running = False
        self.abort_requested = False
        self._exit_scope: trio.CancelScope | None = None
        agent.subscribe(self.printer)

    def interrupt(self) -> bool:
        """Handle one Ctrl-C: abort the running prompt, or ask to exit when idle.

        Returns True when the session should end.
        """
        if self.running and not self.abort_requested:
            self.abort_requested = True
            self.printer.line(self.style.yellow("[Ctrl-C: aborting; Ctrl-C at the prompt exits]"))
            self.agent.abort()
            return False
        self.printer.line(self.style.dim("[Ctrl-C: bye]"))
        if self._exit_scope is not None:
            self._exit_scope.cancel()
        return True

    async def _watch_interrupts(self) -> None:
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.interrupt():
                    return

    async def run(self, *, handle_signals: bool = True) -> int:
        """Chat until the user leaves; returns the exit status (0)."""
        model = self.agent.state.model
        self.printer.line(self.style.bold(f"pi-trio chat with {model.provider}/{model.id}"))
        self.printer.line(self.style.dim(HELP))
        async with trio.open_nursery() as nursery:
            self._exit_scope = nursery.cancel_scope
            if handle_signals:
                nursery.start_soon(self._watch_interrupts)
            await self._loop()
            nursery.cancel_scope.cancel()
        return 0

    async def _loop(self) -> None:
        while True:
            self.printer.line()
            self.printer.write(self.style.bold("you> "))
            line = await self.read_line()
            if line is None:
                self.printer.line(self.style.dim("[end of input: bye]"))
                return
            if self.echo_input:
                self.printer.write(line + "\n")
            else:
                self.printer.typed_newline()
            text = line.strip()
            if not text:
                continue
            if text in ("/quit", "/exit"):
                return
            if text == "/reset":
                self.agent.reset()
                self.printer.line(self.style.dim("[conversation forgotten]"))
                continue
            self.running, self.abort_requested = True, False
            try:
                if self.before_prompt is not None:
                    await self.before_prompt()
                await self.agent.prompt(text)
            finally:
                self.running = False
