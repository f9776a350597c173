"""One model response: streamed into the run (:func:`stream_response`), then settled as the
turn's message (:func:`settled_message`)."""

from __future__ import annotations

from logging import ERROR
from typing import Literal

import trio

from .._callbacks import exception_text
from .._logging import log_failure, loop_logger
from ..events import StreamDone, StreamError
from ..messages import AgentMessage, AssistantMessage, Usage
from ..models import Model
from ..providers import StreamFn
from ._emit import Emitter
from ._request import Request

__all__ = ["bare_message", "settled_message", "stream_response"]

_NO_END = "the stream ended without a done or error event"


async def stream_response(
    emitter: Emitter, stream_fn: StreamFn, request: Request
) -> tuple[AssistantMessage | None, Exception | None]:
    """Stream one response into the run (see :meth:`Emitter.relay`).

    Returns the final message (None when the stream ended without one) and the exception
    behind a failure (the stream function's own, or the provider's error). On cancellation
    the transcript's open message is the partial, and ``Cancelled`` propagates.
    """
    final: AssistantMessage | None = None
    failure: Exception | None = None
    try:
        async with stream_fn(*request) as events:
            end = await emitter.relay(events)
        if isinstance(end, StreamDone):
            final = end.message
        elif isinstance(end, StreamError):
            final, failure = end.error, end.provider_error
    except Exception as exc:
        failure = exc
    if final is None or final.stop_reason == "error":
        # a failure that surfaced while a cancellation was pending (a connect cut short, a
        # close that failed): the cancellation wins, the run is aborted, not errored
        await trio.lowlevel.checkpoint_if_cancelled()
    return final, failure


def settled_message(
    final: AssistantMessage | None,
    failure: Exception | None,
    partial: AgentMessage | None,
    model: Model,
) -> AssistantMessage:
    """The turn's message: ``final``, or (no final message) the ``partial`` one or a bare
    message, marked "error" with ``failure``'s text (which is logged)."""
    if final is not None:
        return final
    text = exception_text(failure) if failure is not None else _NO_END
    if failure is not None:
        log_failure(loop_logger, ERROR, failure, "the model request failed: %s", text)
    message = partial if isinstance(partial, AssistantMessage) else bare_message(model, "error")
    message.stop_reason = "error"
    message.error_message = text
    return message


def bare_message(
    model: Model, reason: Literal["error", "aborted"], text: str | None = None
) -> AssistantMessage:
    """pi's shape of a response that failed before (or without) any content."""
    return AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason=reason,
        error_message=text,
    )
