"""The end of one model response: which message ends the turn, and the batch it asks for.

Synchronous, so that the run's state says what the response was (its phase, its batch) before
the response's ``message_end`` is sent: a cancellation during that send finds it complete.
"""

from __future__ import annotations

from logging import ERROR
from typing import TYPE_CHECKING

from .._callbacks import exception_text
from .._logging import log_failure, loop_logger
from ..messages import AgentMessage, AssistantMessage
from ..tools import ToolBatch
from ._phase import Phase

if TYPE_CHECKING:
    from ._run import _Run

__all__ = ["settle_response"]

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
