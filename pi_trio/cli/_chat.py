"""``pi-trio chat``: an interactive session in the terminal, streaming, with example tools.

Ctrl-C while the agent is answering aborts that run (the transcript keeps the partial answer,
marked aborted) and returns to the prompt; Ctrl-C at the prompt, ``/quit`` or end of input
(Ctrl-D) exits (status 130 after Ctrl-C, else 0); ``/help`` lists the commands. SIGINT is
taken with ``trio.open_signal_receiver`` for the whole session, so it never arrives as a
``KeyboardInterrupt`` in the middle of a run.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TextIO

import trio

from ..agent import Agent
from ._approvals import mark_tools
from ._interrupt import INTERRUPTED
from ._lines import LineTooLongError, StreamLines, ThreadReader
from ._render import EventPrinter, Style, wants_color

__all__ = ["HELP", "ChatSession", "StdinReader"]

HELP = (
    "commands: /help shows this, /reset forgets the conversation, /compact [focus] summarises"
    " its older part, /quit exits (so do Ctrl-D and Ctrl-C at this prompt; Ctrl-C during an"
    " answer aborts it)"
)


class StdinReader:
    """Lines typed on stdin: with line editing and history on a terminal.

    On a terminal each line is read by ``input()`` (GNU readline when Python has it: arrow
    keys, Ctrl-A/E, history with up/down) in a worker thread abandoned on cancellation; the
    terminal's settings are saved first so :meth:`restore` can undo what an abandoned readline
    left behind. Otherwise (a pipe, a file) file descriptor 0 is read with ``os.read`` through
    a :class:`ThreadReader`, never through ``sys.stdin``'s buffer, whose lock an abandoned
    thread would hold at exit (see :class:`ThreadReader`).
    """

    def __init__(self) -> None:
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self._saved: list[Any] | None = None
        self._lines: StreamLines | None = None
        if self.tty:
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (input() edits lines once it is imported)
            with contextlib.suppress(ImportError, OSError):
                import termios

                self._saved = termios.tcgetattr(0)
        else:
            self._lines = StreamLines(ThreadReader.stdin())

    async def __call__(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        if self._lines is None:
            try:
                return await trio.to_thread.run_sync(input, abandon_on_cancel=True)
            except EOFError:
                return None
        try:
            line = await self._lines.receive_line()
        except LineTooLongError:
            return ""
        return None if line is None else line.decode(errors="replace")

    def restore(self) -> None:
        """Put the terminal's settings back as they were (after an abandoned read)."""
        if self._saved is not None:
            import termios

            with contextlib.suppress(OSError):
                termios.tcsetattr(0, termios.TCSADRAIN, self._saved)


class ChatSession:
    """One chat: reads lines, runs each as a prompt, handles Ctrl-C as described above."""

    def __init__(
        self,
        agent: Agent,
        *,
        out: TextIO | None = None,
        read_line: Callable[[], Awaitable[str | None]] | None = None,
        echo_input: bool | None = None,
        before_prompt: Callable[[], Awaitable[None]] | None = None,
        approve_tools: frozenset[str] = frozenset(),
    ) -> None:
        self.agent = agent
        self.approve_tools = approve_tools  # ask before each call of these (--approve)
        self._warned_unknown = False
        self.before_prompt = before_prompt  # e.g. refresh MCP tools
        self.out = out if out is not None else sys.stdout
        self.style = Style(wants_color(self.out))
        self.printer = EventPrinter(self.out, self.style)
        self.printer.show_user_messages = False
        self._stdin: StdinReader | None = None
        if read_line is None:
            read_line = self._stdin = StdinReader()
        self.read_line = read_line
        self.echo_input = (not sys.stdin.isatty()) if echo_input is None else echo_input
        self.running = False
        self.abort_requested = False
        self.interrupted = False
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
        self.interrupted = True
        if self._exit_scope is not None:
            self._exit_scope.cancel()
        return True

    async def _watch_interrupts(self, signals: AsyncIterator[int]) -> None:
        async for _ in signals:
            if self.interrupt():
                return

    async def run(self, *, handle_signals: bool = True) -> int:
        """Chat until the user leaves; returns the exit status (0, or 130 after Ctrl-C)."""
        model = self.agent.state.model
        self.printer.line(self.style.bold(f"pi-trio chat with {model.provider}/{model.id}"))
        self.printer.line(self.style.dim(HELP))
        try:
            # the receiver is in place before the first prompt is shown, so no Ctrl-C misses it
            with contextlib.ExitStack() as stack:
                signals = (
                    stack.enter_context(trio.open_signal_receiver(signal.SIGINT))
                    if handle_signals
                    else None
                )
                async with trio.open_nursery() as nursery:
                    self._exit_scope = nursery.cancel_scope
                    if signals is not None:
                        nursery.start_soon(self._watch_interrupts, signals)
                    await self._loop()
                    nursery.cancel_scope.cancel()
        finally:
            if self._stdin is not None:
                self._stdin.restore()
        return INTERRUPTED if self.interrupted else 0

    async def _loop(self) -> None:
        await self._settle_approvals()  # a resumed session's calls that wait
        while True:
            self.printer.line()
            self.printer.write(self.style.bold("you> "))
            line = await self.read_line()
            if self.interrupted:  # Ctrl-C came while the line was being read
                return
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
                self.printer.line(self.style.dim("[bye]"))
                return
            if text == "/help":
                self.printer.line(self.style.dim(HELP))
                continue
            if text == "/reset":
                self.agent.reset()
                self.printer.line(self.style.dim("[conversation forgotten]"))
                continue
            if text == "/compact" or text.startswith("/compact "):
                await self._run(self.agent.compact(text[len("/compact") :].strip() or None))
                continue
            if text.startswith("/") and " " not in text:
                self.printer.line(self.style.yellow(f"[unknown command {text}; /help lists them]"))
                continue
            await self._run(self._prompt(text))
            await self._settle_approvals()

    async def _prompt(self, text: str) -> None:
        if self.before_prompt is not None:
            await self.before_prompt()
        mark_tools(self.agent, self.approve_tools)
        unknown = sorted(self.approve_tools - {tool.name for tool in self.agent.state.tools})
        if unknown and not self._warned_unknown:  # a typo would switch approval off silently
            self._warned_unknown = True
            names = ", ".join(tool.name for tool in self.agent.state.tools)
            self.printer.line(
                self.style.yellow(f"[--approve {', '.join(unknown)}: no such tool ({names})]")
            )
        await self.agent.prompt(text)

    async def _settle_approvals(self) -> None:
        """Ask about each tool call that waits for a decision ("run name({...})? [y/N]"),
        then continue the run; until nothing waits. End of input or Ctrl-C leaves them
        waiting (a durable session keeps them for the next chat)."""
        agent = self.agent
        while agent.state.awaiting_approval:
            for call in agent.state.pending_approvals:
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                self.printer.write(self.style.yellow(f"run {call.name}({arguments})? [y/N] "))
                line = await self.read_line()
                if line is None or self.interrupted:
                    self.printer.line(self.style.dim("[no answer: the call keeps waiting]"))
                    return
                if self.echo_input:
                    self.printer.write(line + "\n")
                if line.strip().lower() in ("y", "yes"):
                    agent.approve(call.id)
                else:
                    agent.deny(call.id, "the user said no")
            await self._run(agent.continue_())

    async def _run(self, step: Awaitable[object]) -> None:
        """A prompt or a compaction, which Ctrl-C aborts."""
        self.running, self.abort_requested = True, False
        try:
            await step
        finally:
            self.running = False
