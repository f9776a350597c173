"""Closing a run that was aborted or failed: complete the state, then deliver.

Two steps, in this order (the pattern for anything that must survive cancellation):

1. :func:`closing_events` completes the transcript to pi's aborted shape *synchronously*,
   from the run's phase: each closing event is applied (the transcript, then the sink's
   state) before the next is built, so when it returns the transcript is complete and valid
   whether or not anything is delivered.
2. :meth:`Emitter.close` delivers them within the grace period.

The shapes (pi 0.73.1's): mid-stream, the partial message ends with stop_reason "aborted" (or
"error"), then ``turn_end`` and ``agent_end``. Mid-batch, every call without a result gets one
("Tool execution was aborted"), the result messages go out in source order, ``turn_end``; then
a new turn with an empty "aborted" assistant message. A run that had answered and was ending
anyway just ends.
"""

from __future__ import annotations

from typing import Literal

from .._callbacks import exception_text
from .._logging import loop_logger
from ..events import AgentEnd, AgentEvent, TurnEnd, TurnStart
from ..messages import AssistantMessage, TextContent
from ..models import Model
from ..providers import ABORTED_MESSAGE
from ..tools import AgentTool, ToolBatch, last_output
from ._emit import Emitter
from ._phase import Answered, BetweenTurns, Ended, Phase, Requesting, RunningTools, Streaming
from ._response import bare_message

__all__ = ["closing_events"]


def closing_events(
    phase: Phase, emitter: Emitter, model: Model, output_tool: AgentTool | None = None
) -> list[AgentEvent]:
    """Complete the run's state to pi's aborted shape (stop_reason "error" when the emitter
    noted a failure) from ``phase``; return the events to deliver, each applied already.
    With structured output (``output_tool``), ``agent_end`` carries the value the transcript
    ends with (a run that had its answer when the abort came keeps it)."""
    closer = _Closer(emitter, model)
    transcript = emitter.transcript
    match phase:
        case Ended():
            closer.record_late_failure()
            return []
        case RunningTools(batch=batch):
            closer.close_batch(batch)
            closer.bare_turn()
        case Answered(message=message, tool_results=results, ending=ending):
            closer.finish()  # the response's own end, when it was not applied yet
            closer.add(TurnEnd(message, results))
            if closer.failure is not None or not ending or transcript.taken:
                closer.bare_turn()  # the run was going on: close it with pi's empty turn
        case BetweenTurns(ending=True) if closer.failure is None and not transcript.taken:
            pass  # the model had answered and asked for nothing: the run was ending anyway
        case Streaming() if transcript.open is not None:
            closer.end_partial()
        case Requesting() | Streaming():
            closer.finish()
            closer.bare_turn(open_turn=True)
        case BetweenTurns():
            closer.bare_turn()  # queued messages already taken from their queue go in first
    new_messages = transcript.new_messages
    output = None if output_tool is None else last_output(transcript.messages, output_tool)
    closer.add(AgentEnd(new_messages, error=closer.failure, output=output))
    return closer.events


class _Closer:
    """The closing events of one run, each applied as it is added."""

    def __init__(self, emitter: Emitter, model: Model) -> None:
        self.emitter = emitter
        self.model = model
        self.failure = emitter.failure
        self.reason: Literal["error", "aborted"] = "aborted" if self.failure is None else "error"
        self.text = ABORTED_MESSAGE if self.failure is None else exception_text(self.failure)
        self.events: list[AgentEvent] = []

    def add(self, event: AgentEvent) -> None:
        self.emitter.apply(event)
        self.events.append(event)

    def finish(self) -> None:
        """End the open message and announce every taken one."""
        for event in self.emitter.transcript.finish():
            self.add(event)

    def bare_turn(self, *, open_turn: bool = False) -> None:
        """pi's last turn of an aborted run: an empty assistant message with the abort's (or
        the failure's) text; ``open_turn``: its ``turn_start`` was sent already."""
        if not open_turn:
            self.add(TurnStart())
            self.finish()
        message = bare_message(self.model, self.reason, self.text)
        self.emitter.transcript.take((message,))
        self.finish()
        self.add(TurnEnd(message, []))

    def end_partial(self) -> None:
        """The streaming message ends as it is, marked aborted (or failed)."""
        partial = self.emitter.transcript.open
        assert isinstance(partial, AssistantMessage)
        partial.stop_reason = self.reason
        partial.error_message = self.text
        self.finish()
        self.add(TurnEnd(partial, []))

    def close_batch(self, batch: ToolBatch) -> None:
        """Every call of the batch without a result gets one; its turn ends."""
        self.finish()  # the assistant's end, or an open result's
        tool_events, results = batch.close_out()
        for event in tool_events:
            self.add(event)
        self.emitter.transcript.take(results)
        self.finish()
        self.add(TurnEnd(batch.assistant, batch.messages))

    def record_late_failure(self) -> None:
        """A sink failed on ``agent_end``: record it as pi does (an error assistant message at
        the end of the transcript), though ``agent_end`` has been delivered and nothing more
        is."""
        if self.failure is None:
            return
        message = bare_message(self.model, self.reason, self.text)
        message.content = [TextContent("")]  # pi's shape of a failed run (handleRunFailure)
        self.emitter.record_after_end(message)
        loop_logger.error(
            "the event sink failed on agent_end; recorded as an error message",
            exc_info=self.failure,
        )
