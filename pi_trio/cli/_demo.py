"""``pi-trio demo``: a short live session that shows what the library does, in a few seconds.

On the scripted model (no key, no network) it streams text, runs a batch of three tool calls
in parallel and times them, steers the run from another task while the tools run, queues a
follow-up, aborts a long answer with ``trio.move_on_after`` and checks that the transcript is
still valid, keeps a session in an embedded SQLite store across a simulated restart, then
prints a one-screen summary. ``--model provider/id`` runs the same session
against a real model.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Annotated, TextIO

import attrs
import trio

from ..agent import Agent
from ..events import AgentEvent, MessageUpdate, TextDelta, ToolExecutionStart
from ..messages import (
    AssistantMessage,
    Context,
    ToolResultMessage,
    UserMessage,
)
from ..models import Model
from ..providers import StreamOptions, faux
from ..testing import check_transcript
from ..tools import tool
from ._agents import new_state
from ._demo_sessions import durable_section
from ._render import EventPrinter, Style, text_of, wants_color

__all__ = ["DemoResult", "run_demo"]

WEATHER = {
    "Paris": ("14 °C, light rain", 0.30),
    "Tokyo": ("22 °C, clear sky", 0.45),
    "Lima": ("19 °C, overcast", 0.60),
}
"""City -> (report, seconds the scripted weather service takes to answer)."""

QUESTION = "What's the weather in Paris, Tokyo and Lima right now?"
STEER = "Keep it to one short line per city, please."
FOLLOW_UP = "Which of the three is warmest?"
STORY = "Now tell me a long story about a lighthouse keeper."
AFTER = "Are you still there after that abort?"
SYSTEM_PROMPT = (
    "You are the assistant in a short terminal demo. For weather questions call get_weather "
    "once per city, all in the same turn. Keep answers brief unless asked for a story."
)
SCRIPTED_DEADLINE = 1.0
REAL_DEADLINE = 4.0


@tool
async def get_weather(city: Annotated[str, "City name, e.g. Paris"]) -> str:
    """The current weather in a city (a scripted service with a realistic delay)."""
    report, seconds = WEATHER.get(city.strip().title(), ("12 °C, fog", 0.4))
    await trio.sleep(seconds)
    return f"{city}: {report}"


def _reports(context: Context) -> list[str]:
    return [
        text_of(m)
        for m in context.messages
        if isinstance(m, ToolResultMessage) and m.tool_name == "get_weather"
    ]


def _last_user_text(context: Context) -> str:
    for message in reversed(context.messages):
        if isinstance(message, UserMessage):
            return text_of(message)
    return ""


def scripted_answer(context: Context, options: StreamOptions, index: int) -> AssistantMessage:
    """The scripted model: answers the demo's prompts from what it was sent."""
    last = _last_user_text(context)
    tail = context.messages[-1]
    if isinstance(tail, UserMessage) and text_of(tail) == QUESTION:
        return faux.assistant_message(
            [faux.text("I'll ask the weather service for all three cities at once.")]
            + [faux.tool_call("get_weather", {"city": city}) for city in WEATHER]
        )
    if isinstance(tail, UserMessage) and text_of(tail) == STEER:
        lines = "\n".join(f"- {report}" for report in _reports(context))
        return faux.assistant_message(f"Here you go, one line each:\n{lines}")
    if isinstance(tail, ToolResultMessage):
        return faux.assistant_message("All three reports are in: " + "; ".join(_reports(context)))
    if isinstance(tail, UserMessage) and text_of(tail) == FOLLOW_UP:
        return faux.assistant_message("Tokyo is the warmest of the three, at 22 °C.")
    if isinstance(tail, UserMessage) and text_of(tail) == STORY:
        nights = " ".join(
            f"On night {n} the keeper counted {3 * n} ships and signalled each one home."
            for n in range(1, 80)
        )
        return faux.assistant_message("Once upon a time there was a lighthouse keeper. " + nights)
    if isinstance(tail, UserMessage) and text_of(tail) == AFTER:
        return faux.assistant_message(
            "Yes. The story I was telling is in the transcript, marked 'aborted', "
            "and the conversation goes on from there."
        )
    return faux.assistant_message(f"(scripted) You said: {last}")


@attrs.define
class DemoResult:
    """What the demo measured; the summary is printed from it and tests read it."""

    model: str
    scripted: bool
    tool_seconds: dict[str, float] = attrs.field(factory=dict)
    batch_wall: float = 0.0
    steered: bool = False
    deadline: float = 0.0
    aborted: bool = False
    problems: list[str] = attrs.field(factory=list)
    messages_by_role: dict[str, int] = attrs.field(factory=dict)
    text_deltas: int = 0
    elapsed: float = 0.0
    answers: int = 0
    model_errors: list[str] = attrs.field(factory=list)
    durable_messages: int = 0
    durable_entries: int = 0

    @property
    def every_request_failed(self) -> bool:
        """True when the model never answered: every assistant message is an error."""
        return bool(self.model_errors) and len(self.model_errors) == self.answers

    @property
    def sequential_seconds(self) -> float:
        return sum(self.tool_seconds.values())


class _Demo:
    def __init__(self, out: TextIO, model: Model | None, token_delay: float) -> None:
        self.style = Style(wants_color(out))
        self.printer = EventPrinter(out, self.style)
        self.scripted = model is None
        if model is None:
            script = faux.FauxModel(
                [scripted_answer] * 8, chunker=faux.by_words, token_delay=token_delay
            )
            self.agent = Agent(
                new_state(SYSTEM_PROMPT, script.model, [get_weather]), stream_fn=script
            )
        else:
            self.agent = Agent(new_state(SYSTEM_PROMPT, model, [get_weather]))
        label = f"{self.agent.state.model.provider}/{self.agent.state.model.id}"
        self.result = DemoResult(model=label, scripted=self.scripted)
        self.tools_started = trio.Event()
        self.batch_started: float | None = None
        self.batch_ended: float | None = None
        self.agent.subscribe(self._watch)
        self.agent.subscribe(self.printer)

    def _watch(self, event: AgentEvent) -> None:
        match event:
            case ToolExecutionStart():
                if self.batch_started is None:
                    self.batch_started = trio.current_time()
                self.tools_started.set()
            case MessageUpdate(assistant_message_event=TextDelta()):
                self.result.text_deltas += 1
            case _:
                if event.type == "tool_execution_end":
                    self.batch_ended = trio.current_time()

    def heading(self, text: str) -> None:
        self.printer.line()
        self.printer.line(self.style.bold(f"== {text} =="))

    def note(self, text: str) -> None:
        self.printer.line(self.style.yellow(f"[demo] {text}"))

    async def _steer_while_tools_run(self) -> None:
        await self.tools_started.wait()
        await trio.sleep(0.1)
        self.note(f"another task calls agent.steer({STEER!r}) while the tools run")
        self.agent.steer(STEER)
        self.note(f"... and agent.follow_up({FOLLOW_UP!r})")
        self.agent.follow_up(FOLLOW_UP)
        self.result.steered = True

    async def run(self) -> DemoResult:
        started = trio.current_time()
        p = self.printer
        s = self.style
        scripted = "scripted model, no network" if self.scripted else "a real model"
        p.line(s.bold(f"pi_trio demo on {self.result.model} ({scripted})"))

        self.heading("1. streaming, a parallel tool batch, steering and a follow-up")
        p.line(s.dim("await agent.prompt(...); steer() and follow_up() come from another task"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._steer_while_tools_run)
            await self.agent.prompt(QUESTION)
            nursery.cancel_scope.cancel()
        self.result.tool_seconds = {
            call_id: seconds for call_id, (_, seconds) in p.tool_times.items()
        }
        if self.batch_started is not None and self.batch_ended is not None:
            self.result.batch_wall = self.batch_ended - self.batch_started
        if self.result.tool_seconds:
            count = len(self.result.tool_seconds)
            self.note(
                f"{count} tool calls ran in parallel: {self.result.batch_wall:.2f} s wall, "
                f"{self.result.sequential_seconds:.2f} s if run one after another"
            )
        else:
            self.note("the model called no tools this time")
        if not self.result.steered:
            self.note("no tool batch ran, so nothing was steered")

        deadline = SCRIPTED_DEADLINE if self.scripted else REAL_DEADLINE
        self.result.deadline = deadline
        self.heading(f"2. abort by deadline: trio.move_on_after({deadline})")
        with trio.move_on_after(deadline) as scope:
            await self.agent.prompt(STORY)
        self.result.aborted = scope.cancelled_caught
        messages = self.agent.state.messages
        last = messages[-1] if messages else None
        if self.result.aborted:
            reason = last.stop_reason if isinstance(last, AssistantMessage) else "?"
            self.note(f"deadline hit: the run was closed, last stop_reason {reason!r}")
        else:
            self.note("the model finished before the deadline")
        self.result.problems = check_transcript(messages, round_trip=True)
        if self.result.problems:
            for problem in self.result.problems:
                p.line(s.red(f"[demo] transcript problem: {problem}"))
        else:
            p.line(
                s.green(
                    f"[demo] transcript valid: {len(messages)} messages, every tool call "
                    "answered once, identical after a round trip through pi's JSON"
                )
            )

        self.heading("3. the conversation goes on")
        await self.agent.prompt(AFTER)

        if self.scripted:
            self.heading("4. a durable session: SQLite, a restart, a resume")
            self.result.durable_messages, self.result.durable_entries = await durable_section(
                new_state(SYSTEM_PROMPT, self.agent.state.model, [get_weather]),
                self.agent.stream_fn,
                self.printer,
                self.note,
                QUESTION,
                FOLLOW_UP,
            )

        self.result.messages_by_role = dict(Counter(m.role for m in self.agent.state.messages))
        answers = [m for m in self.agent.state.messages if isinstance(m, AssistantMessage)]
        self.result.answers = len(answers)
        self.result.model_errors = [
            m.error_message or "error" for m in answers if m.stop_reason == "error"
        ]
        self.result.elapsed = trio.current_time() - started
        self.summary()
        return self.result

    def summary(self) -> None:
        r = self.result
        s = self.style
        roles = ", ".join(f"{role} {n}" for role, n in r.messages_by_role.items())
        total = sum(r.messages_by_role.values())
        if r.tool_seconds:
            saved = r.sequential_seconds / r.batch_wall if r.batch_wall else 0.0
            tools = (
                f"{len(r.tool_seconds)} calls in one parallel batch: {r.batch_wall:.2f} s wall "
                f"vs {r.sequential_seconds:.2f} s sequential ({saved:.1f}x)"
            )
        else:
            tools = "none called"
        rows = [
            ("model", r.model + (" (scripted)" if r.scripted else "")),
            ("streamed", f"{r.text_deltas} text deltas"),
            ("tools", tools),
            ("steering", "1 message injected mid-run" if r.steered else "not used"),
            (
                "follow-up",
                "1 message, answered when the agent would have stopped"
                if r.steered
                else "not used",
            ),
            (
                "abort",
                f"move_on_after({r.deadline}) "
                + ("closed the run as 'aborted'" if r.aborted else "not reached"),
            ),
            (
                "transcript",
                f"{total} messages ({roles}): "
                + ("valid" if not r.problems else f"{len(r.problems)} problems"),
            ),
            (
                "durable",
                f"{r.durable_messages} messages resumed and extended, "
                f"{r.durable_entries} log entries (SQLite)"
                if r.durable_entries
                else "not shown (a real model's session is not stored by the demo)",
            ),
            ("elapsed", f"{r.elapsed:.1f} s"),
        ]
        self.printer.line()
        self.printer.line(s.bold("== summary =="))
        for key, value in rows:
            self.printer.line(f"  {key:<11} {value}")
        self.printer.line()
        self.printer.line(
            "Next: `pi-trio chat --model faux` (or provider/id), `pi-trio rpc`, and docs/."
        )


async def run_demo(
    out: TextIO | None = None, *, model: Model | None = None, token_delay: float = 0.015
) -> DemoResult:
    """Run the demo, writing to ``out`` (stdout); ``model=None`` uses the scripted model."""
    demo = _Demo(out if out is not None else sys.stdout, model, token_delay)
    return await demo.run()
