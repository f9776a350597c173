"""One model response: streamed into the run (:func:`assistant_turn`), then settled as the
turn's message, with the batch it asks for (:func:`settle_response`).

Settling is synchronous, so that the run's state says what the response was (its phase, its
batch) before the response's ``message_end`` is sent: a cancellation during that send finds it
complete.
"""

from __future__ import annotations

from logging import ERROR
from typing import TYPE_CHECKING, cast

import trio

from .._callbacks import exception_text
from .._logging import log_failure, loop_logger
from ..events import (
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..messages import AgentMessage, AssistantMessage
from ..tools import ToolBatch
from ._phase import Phase
from ._request import build_request, build_request_now

if TYPE_CHECKING:
    from ._run import _Run

__all__ = ["assistant_turn", "finish_response", "settle_response"]

_UPDATE_TYPES = frozenset(
    {
        TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta, ThinkingEnd,
        ToolCallStart, ToolCallDelta, ToolCallEnd,
    }
)  # fmt: skip

_new = object.__new__  # an event built without its __init__: see assistant_turn

_NO_END = "the stream ended without a done or error event"


def settle_response(
    run: _Run, final: AssistantMessage | None, failure: Exception | None
) -> tuple[AssistantMessage, AgentMessage | None]:
    """Settle the response as the turn's message: ``final``, or (no final message) the partial
    one or a bare message, marked "error" with ``failure``'s text. Sets the run's phase, and its
    batch when the message calls tools. Returns the message and the partial message it
    replaces (None when the stream never started one)."""
    partial = run.transcript.open if run.phase is Phase.STREAMING else None
    if final is None:
        text = exception_text(failure) if failure is not None else _NO_END
        if failure is not None:
            log_failure(loop_logger, ERROR, failure, "the model request failed: %s", text)
        message = partial if isinstance(partial, AssistantMessage) else None
        if message is None:
            message = run.bare_message("error", text)
        message.stop_reason = "error"
        message.error_message = text
    else:
        message = final
    run.response_error = failure if message.stop_reason == "error" else None
    if run.tracing is not None:
        run.tracing.end_chat(message, failure)
    failed = message.stop_reason == "error" or message.stop_reason == "aborted"
    calls = [] if failed else message.tool_calls
    if calls:
        config = run.config
        run.batch = ToolBatch(
            message,
            calls,
            run.context,
            run.tools,
            run.emit_now,
            run.announce,
            sequential=config.tool_execution == "sequential",
            before_tool_call=config.before_tool_call,
            after_tool_call=config.after_tool_call,
            max_parallel=config.max_parallel_tools,
            tool_timeout=config.tool_timeout,
            steering=(
                config.steering_signal if config.steering_policy == "at_tool_boundary" else None
            ),
        )
        run.phase = Phase.RUNNING_TOOLS
    else:
        run.reply = message
        run.phase = Phase.ANSWERED
    return message, partial


async def assistant_turn(run: _Run) -> AssistantMessage:
    """One model response, streamed: each event applied and delivered as it comes (the
    deltas on an inlined path), then settled as the turn's message and ended."""
    final: AssistantMessage | None = None
    failure: Exception | None = None
    try:
        context, options, model = build_request_now(run) or await build_request(run)
    except Exception as exc:
        return await finish_response(run, None, exc)
    deliver = run.deliver
    transcript = run.transcript
    sink_apply = run.sink_apply
    try:
        async with run.stream_fn(model, context, options) as events:
            async for event in events:
                cls = type(event)
                if cls in _UPDATE_TYPES:  # the hot path: one per streamed delta
                    open_message = transcript.open
                    if open_message is None:
                        continue  # pi ignores updates before "start"
                    partial = event.partial  # type: ignore[union-attr]
                    # MessageUpdate(partial, event), without the Python __init__ call
                    update = _new(MessageUpdate)
                    update.message = partial
                    update.assistant_message_event = event
                    update.seq = None
                    if partial is not open_message:  # the provider swapped its partial
                        transcript.open = partial
                        sink_apply(update)
                    # run.emit(update), inlined: no coroutine per delta (none at all when
                    # the listeners are plain functions). An update whose message is the
                    # one already open changes no state, so it is not applied (the sink's
                    # apply contract says so).
                    try:
                        pending = deliver(update)
                        if pending is not None:
                            await pending
                    except Exception as exc:
                        await run.fail(exc)
                    except BaseException:
                        run.interrupted = update
                        raise
                elif cls is StreamStart:
                    # a second "start" replaces the first partial message
                    run.phase = Phase.STREAMING
                    pending = run.emit_now(MessageStart(cast(StreamStart, event).partial))
                    if pending is not None:
                        await pending
                elif cls is StreamDone:
                    final = cast(StreamDone, event).message
                    break
                elif cls is StreamError:
                    final = cast(StreamError, event).error
                    failure = cast(StreamError, event).provider_error
                    break
    except Exception as exc:
        failure = exc
    if final is None or final.stop_reason == "error":
        # a failure that surfaced while a cancellation was pending (a connect cut short, a
        # close that failed): the cancellation wins, the run is aborted, not errored
        await trio.lowlevel.checkpoint_if_cancelled()
    return await finish_response(run, final, failure)


async def finish_response(
    run: _Run, final: AssistantMessage | None, failure: Exception | None
) -> AssistantMessage:
    message, partial = settle_response(run, final, failure)
    if partial is None:
        run.transcript.take((message,))
        pending = run.emit_now(MessageStart(message))
        if pending is not None:
            await pending
    else:
        run.transcript.open = message  # the final message replaces the partial
    pending = run.emit_now(MessageEnd(message))
    if pending is not None:
        await pending
    return message
