"""Structured output in a run: the output tool offered, each attempt judged, the model nudged.

A run with ``config.output_tool`` offers that tool in every request and asks for a tool call
(``tool_choice="required"``, unless the options chose otherwise). After each turn
:meth:`OutputGuard.judge` says whether the model is asked again:

- a batch holding a valid call of the output tool: no, the run has its value;
- a text answer (no tool call): a failed attempt; the next steering poll brings a user
  message telling the model to call the tool;
- a batch whose output calls all failed (pi's validation error went back as their result):
  a failed attempt;
- a batch of other tools only: the batch decides, as in any run.

After ``output_retries`` + 1 failed attempts (since the last valid one) the guard holds an
:class:`pt.OutputError`, and the run's next response is an empty assistant message with
stop_reason "error" naming the last failure, made without a request: pi's shape of a failed
turn, so the run ends as after a provider's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from .._callbacks import call_maybe_async
from .._errors import OutputError
from .._logging import loop_logger
from ..messages import AgentMessage, AssistantMessage, TextContent, ToolResultMessage, UserMessage
from ..providers import StreamOptions
from ..tools import AgentContext, AgentTool, has_output
from ._config import GetMessages

__all__ = ["NUDGE_TEXT", "OutputGuard", "ending_results"]

NUDGE_TEXT: Final = (
    'Give your final answer by calling the tool "{name}" with it as the arguments: '
    "a text answer is not accepted."
)

_FAILED: Final = frozenset({"error", "aborted"})


class OutputGuard:
    """One run's structured output: its tool, its failed attempts, the nudge due.

    Args:
        tool: the output tool (:func:`pt.output_tool`).
        retries: failed attempts the model may follow with another one.
        get_steering: the run's steering source, polled after the nudge.
    """

    __slots__ = ("_get_steering", "failure", "failures", "nudge_due", "retries", "tool")

    def __init__(self, tool: AgentTool, retries: int, get_steering: GetMessages | None) -> None:
        self.tool = tool
        self.retries = retries
        self._get_steering = get_steering
        self.failures = 0
        self.nudge_due = False
        self.failure: OutputError | None = None
        """Set once the attempts are used up: the run's last response is this failure."""

    def offer(
        self, context: AgentContext, options: StreamOptions
    ) -> tuple[AgentContext, StreamOptions]:
        """The run's context with the output tool among its tools, and the options asking for
        a tool call (unless they ask for something themselves).

        Raises:
            ValueError: another tool has the output tool's name.
        """
        context = attrs.evolve(context, tools=self.tools_with_output(context.tools))
        if options.tool_choice is None:
            options = attrs.evolve(options, tool_choice="required")
        return context, options

    def tools_with_output(self, tools: Sequence[AgentTool]) -> list[AgentTool]:
        """``tools`` and the output tool (once).

        Raises:
            ValueError: another tool has the output tool's name.
        """
        tool = self.tool
        for other in tools:
            if other.name == tool.name:
                if other is tool:
                    return list(tools)
                raise ValueError(
                    f'a tool is named "{tool.name}", the name of the structured output tool: '
                    "rename that tool (with run_agent_loop, the output tool may be named "
                    'otherwise instead: pt.output_tool(output_type, name="..."))'
                )
        return [*tools, tool]

    def judge(
        self, message: AssistantMessage, results: Sequence[ToolResultMessage], more: bool
    ) -> bool:
        """After a turn: whether the model is asked again (``more``: what the batch says).

        A text answer makes the nudge due; a run whose attempts are used up gets its
        :attr:`failure` (and is asked again: its last response is that failure)."""
        if message.stop_reason in _FAILED:
            return more  # the run ends with that failure
        tool = self.tool
        calls = [result for result in results if result.tool_name == tool.name]
        if results and not calls:
            return more  # other tools only: on the way to the answer
        if calls and has_output(tool, calls):
            self.failures = 0
            return False
        self.failures += 1
        last_error = _failure_text(calls[-1]) if calls else None
        if self.failures > self.retries:
            self.failure = _failure(tool.name, self.failures, last_error)
            loop_logger.warning("%s", self.failure)
        elif not calls:
            self.nudge_due = True
        return True

    async def poll_steering(self) -> Sequence[AgentMessage]:
        """The run's steering poll: the nudge first, when one is due, then the steering
        source's messages."""
        taken: list[AgentMessage] = []
        if self.nudge_due:
            self.nudge_due = False
            taken.append(UserMessage(NUDGE_TEXT.format(name=self.tool.name)))
        if self._get_steering is not None:
            queued = await call_maybe_async(self._get_steering)
            if queued:
                taken.extend(queued)
        return taken


def ending_results(messages: Sequence[AgentMessage]) -> list[ToolResultMessage]:
    """The tool results that end ``messages``: the last batch's, in order."""
    index = len(messages)
    while index and isinstance(messages[index - 1], ToolResultMessage):
        index -= 1
    return list(messages[index:])  # type: ignore[arg-type]


def _failure_text(result: ToolResultMessage) -> str:
    """What went wrong with a call of the output tool: its error result's text (pi's
    validation error, say), or why a result that is no error holds no value."""
    if not result.is_error:
        return "its result holds no value (an after_tool_call hook replaced its details?)"
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _failure(name: str, attempts: int, last_error: str | None) -> OutputError:
    counted = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    if last_error is None:
        why = f'the model answered in text instead of calling the tool "{name}"'
    else:
        why = f'the last call of "{name}" was invalid: {last_error}'
    return OutputError(
        f"Structured output failed after {counted}: {why}",
        tool_name=name,
        attempts=attempts,
        last_error=last_error,
    )
