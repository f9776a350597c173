"""Closing a run that was aborted or failed: complete the state, then deliver.

Two steps, in this order (the pattern for anything that must survive cancellation):

1. :func:`closing_events` completes the transcript to pi's aborted shape *synchronously*,
   from the run's :class:`Phase`: each closing event is applied to the run's state and the
   sink's before the next is built, so when it returns the transcript is complete and valid
   whether or not anything is delivered.
2. :func:`close_run` delivers them within ``config.close_timeout``: first the event whose
   send the cancellation interrupted (a sink must deliver it to whoever missed it, and to
   nobody twice), then the closing events. Delivery is synchronous as far as the sink allows
   (``pt.Agent``'s, to plain-function listeners: nothing to shield, no schedule point); only
   an awaitable that the sink returns is awaited, in a shielded scope whose deadline is the
   end of the grace period. A sink that raises still gets the rest; once the grace period
   has expired during an await, the remaining events are not delivered.

The shapes (pi 0.73.1's): mid-stream, the partial message ends with stop_reason "aborted" (or
"error"), then ``turn_end`` and ``agent_end``. Mid-batch, every call without a result gets one
("Tool execution was aborted"), the result messages go out in source order, ``turn_end``; then
a new turn with an empty "aborted" assistant message. A run that had answered and was ending
anyway just ends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Literal

import trio

from .._callbacks import exception_text
from ..events import AgentEnd, AgentEvent, MessageEnd, MessageStart, TurnEnd, TurnStart
from ..messages import AssistantMessage
from ..providers import ABORTED_MESSAGE
from ._phase import Phase

if TYPE_CHECKING:
    from ._run import _Run

__all__ = ["close_run", "closing_events"]

logger = logging.getLogger("pi_trio.loop")


def closing_events(run: _Run) -> list[AgentEvent]:
    """Complete ``run``'s state to pi's aborted shape; return the events to deliver.

    Every returned event has been applied already (to the transcript, then the sink's state),
    each before the next was built.
    """
    failure = run.failure
    reason: Literal["error", "aborted"] = "aborted" if failure is None else "error"
    text = ABORTED_MESSAGE if failure is None else exception_text(failure)
    transcript = run.transcript
    events: list[AgentEvent] = []
    append = events.append
    start, end, sink_apply = transcript.start, transcript.end, run.sink_apply

    # one call per closing event (this is the abort's hot path): run.apply, inlined
    def add(event: AgentEvent) -> None:
        cls = type(event)
        if cls is MessageEnd:
            end(event.message)  # type: ignore[union-attr]
        elif cls is MessageStart:
            start(event.message)  # type: ignore[union-attr]
        sink_apply(event)
        append(event)

    def finish() -> None:
        for event in transcript.finish():  # the open message's end, the taken ones
            add(event)

    def bare_turn() -> None:
        message = run.bare_message(reason, text)
        transcript.take((message,))
        finish()
        add(TurnEnd(message, []))

    match run.phase:
        case Phase.ENDED:
            if failure is not None:
                _record_late_failure(run, reason, text)
            return events
        case Phase.RUNNING_TOOLS:  # first: the usual place of an abort
            batch = run.batch
            assert batch is not None
            run.batch = None
            finish()  # the assistant's end, or an open result's
            tool_events, results = batch.close_out()
            for event in tool_events:
                add(event)
            transcript.take(results)
            finish()
            add(TurnEnd(batch.assistant, batch.messages))
            add(TurnStart())
            bare_turn()
        case Phase.ANSWERED:
            # the turn's response (and its batch, if any) is done; turn_end is next
            finish()  # the response's own end, when it was not applied yet
            message = run.reply if run.reply is not None else _turn_message(run)
            done = run.turn_results
            add(TurnEnd(message, done if done is not None else []))
            if failure is not None or run.reply is None or transcript.taken:
                add(TurnStart())  # the run was going on: close it with pi's empty turn
                finish()
                bare_turn()
        case Phase.BETWEEN_TURNS if failure is None and run.reply and not transcript.taken:
            pass  # the model had answered and asked for nothing: the run was ending anyway
        case Phase.STREAMING:
            partial = transcript.open
            assert isinstance(partial, AssistantMessage)
            partial.stop_reason = reason
            partial.error_message = text
            finish()
            add(TurnEnd(partial, []))
        case Phase.STARTING:
            finish()
            bare_turn()
        case Phase.BETWEEN_TURNS:
            add(TurnStart())
            finish()  # queued messages already taken from their queue
            bare_turn()
    run.phase = Phase.ENDED
    add(AgentEnd(transcript.new_messages, error=failure))
    return events


def _turn_message(run: _Run) -> AssistantMessage:
    """The assistant message of the turn being closed (the last one in the transcript)."""
    for message in reversed(run.transcript.messages):
        if isinstance(message, AssistantMessage):
            return message
    raise AssertionError("an answered turn without an assistant message")


def _record_late_failure(run: _Run, reason: Literal["error", "aborted"], text: str) -> None:
    """A sink failed on ``agent_end``: record it as pi does (an error assistant message at the
    end of the transcript), though ``agent_end`` has been delivered and nothing more is."""
    message = run.bare_message(reason, text)
    run.transcript.messages.append(message)
    run.sink_apply(MessageEnd(message))  # the sink's state (and a durable log) records it too
    logger.error(
        "the event sink failed on agent_end; recorded as an error message",
        exc_info=run.failure,
    )


def close_run(run: _Run) -> Awaitable[None] | None:
    """Complete the transcript, then deliver the closing events within the grace period.

    Synchronous as far as the sink allows: None when every closing event is delivered (no
    coroutine, no schedule point: the usual abort, plain-function listeners); otherwise an
    awaitable that the caller must await at once to deliver the rest. It is shielded:
    cancellation does not interrupt it; it returns after at most ``config.close_timeout``
    seconds, counted from the first wait (a listener that blocks without awaiting cannot be
    interrupted, as anywhere in Trio). Raises (from the awaitable) the first
    ``KeyboardInterrupt`` a subscriber raised, once the others had every event.
    """
    events = closing_events(run)
    interrupted, run.interrupted = run.interrupted, None
    if interrupted is not None:
        events.insert(0, interrupted)
    if not events:
        return None
    run.tell_closing()  # e.g. blocking channels stop waiting for their readers
    deliver = run.deliver
    for index, event in enumerate(events):
        try:
            pending = deliver(event)
        except Exception:
            continue  # a failing sink may still deliver the rest (to other listeners)
        except BaseException as exc:
            return _deliver_rest(run, events, index, None, exc)
        if pending is not None:
            return _deliver_rest(run, events, index, pending, None)
    return None


async def _deliver_rest(
    run: _Run,
    events: list[AgentEvent],
    index: int,
    pending: Awaitable[None] | None,
    held: BaseException | None,
) -> None:
    """Deliver ``events[index:]``; the first one's delivery began and returned ``pending``
    (a listener waits) or raised ``held`` (a ``KeyboardInterrupt``: it is sent again, and
    the others get the rest first)."""
    deliver = run.deliver
    deadline = trio.current_time() + run.config.close_timeout
    resumes = 1  # the first event was sent once already
    expired = False
    for event in events[index:]:
        while True:
            try:
                if pending is None and resumes < _MAX_RESUMES:
                    resumes += 1
                    pending = deliver(event)
                if pending is not None:  # a listener waits: shielded, within the grace period
                    with trio.CancelScope(shield=True, deadline=deadline) as scope:
                        await pending
                    expired = scope.cancelled_caught
            except Exception:
                pass  # a failing sink may still deliver the rest (to other listeners)
            except BaseException as exc:
                held = held or exc
                pending = None
                continue  # the same event again: the sink resumes after the one that raised
            break
        if expired:
            break  # the grace period is over
        pending, resumes = None, 0
    if held is not None:
        raise held


_MAX_RESUMES = 64
"""How many times one closing event is sent again after a subscriber raised a
``KeyboardInterrupt`` on it (each resend resumes after that subscriber)."""
