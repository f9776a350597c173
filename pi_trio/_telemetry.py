"""OpenTelemetry spans for runs, model requests and tool calls (the ``otel`` extra).

Spans follow the OpenTelemetry GenAI semantic conventions::

    invoke_agent                 one per run (INTERNAL): the run's outcome
    ├── chat {model}             one per model request (CLIENT): model, usage, finish reason
    ├── execute_tool {name}      one per executed tool call (INTERNAL): call id, outcome
    └── ...

Only ``opentelemetry-api`` is needed at run time, and only when it is installed: nothing here
imports it before the first run that asks (``import pi_trio`` never does), and without it
every hook below is a ``None`` check. With the API but no tracer provider set up (the API's
default proxy, which records nothing), no span is made at all; a provider set later is picked
up at the next run.

Context handling, and why: the run's span is made current (attached) in the run's task for
the run's duration, so tool tasks started from it (which copy its context) and the
application's own spans nest under it. A tool's span is current in that tool's task (or,
for a single or sequential call, in the run's task, strictly nested). A ``chat`` span is
never attached: its stream is an async generator that may be closed early or from
elsewhere, and a context attached around a ``yield`` is what fails to detach ("Failed to
detach context"). It is started and ended explicitly, with the run's span as parent, so
nothing is held across a ``yield``. Spans are made per run, request and tool call, never
per event.

Prompts and outputs (``gen_ai.input.messages``, ``gen_ai.output.messages``, tool arguments
and results) are recorded only when asked: ``pi_trio.otel.configure(capture_content=True)``
or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ._callbacks import exception_text
from ._errors import ProviderError

if TYPE_CHECKING:
    from .messages import AssistantMessage, Context, ToolCall
    from .models import Model

__all__ = ["RunTracing", "configure", "end_tool", "start_run", "start_tool", "tracing_on"]

T = TypeVar("T")

_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls", "error": "error"}
_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class _Settings:
    resolved = False
    enabled = True
    trace: Any = None  # the opentelemetry.trace module, once imported
    tracer: Any = None  # the Tracer runs use, None when off
    provider: Any = None  # a TracerProvider to use instead of the global one
    global_provider: Any = None  # the global provider the tracer was made from
    capture: bool | None = None  # None: from the environment


_settings = _Settings()


def configure(
    *,
    enabled: bool = True,
    tracer_provider: Any = None,
    capture_content: bool | None = None,
) -> None:
    """Set up pi_trio's spans; takes effect at the next run.

    Args:
        enabled: False: make no spans at all (not even no-op ones).
        tracer_provider: an ``opentelemetry.sdk.trace.TracerProvider`` (or any provider) to
            use instead of the global one.
        capture_content: record prompts, outputs, tool arguments and results on the spans
            (they may hold personal data); None: as the environment variable
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (default off).
    """
    _settings.enabled = enabled
    _settings.provider = tracer_provider
    _settings.capture = capture_content
    _settings.resolved = False


def _tracer() -> Any:
    """The tracer, or None when tracing is off, the API is not installed, or no tracer
    provider is set up (the API's default proxy records nothing: then no span is made at
    all, which keeps a run as cheap as without the extra)."""
    if not _settings.resolved:
        _resolve()
    trace = _settings.trace
    if trace is None:
        return None
    if _settings.provider is not None:
        return _settings.tracer
    provider = trace.get_tracer_provider()
    if provider is not _settings.global_provider:  # set (or replaced) since the last run
        _settings.global_provider = provider
        real = not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
        _settings.tracer = provider.get_tracer("pi_trio", _version()) if real else None
    return _settings.tracer


def _resolve() -> None:
    _settings.resolved = True
    _settings.trace = _settings.tracer = _settings.global_provider = None
    if not _settings.enabled or importlib.util.find_spec("opentelemetry") is None:
        return
    try:
        from opentelemetry import trace
    except ImportError:
        return
    _settings.trace = trace
    if _settings.provider is not None:
        _settings.tracer = _settings.provider.get_tracer("pi_trio", _version())


def _version() -> str:
    from ._version import __version__

    return __version__


def _capture() -> bool:
    if _settings.capture is not None:
        return _settings.capture
    return os.environ.get(_CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes")


def _json(value: Any) -> str:
    from . import wire

    try:
        return json.dumps(wire.to_json(value), ensure_ascii=False)
    except Exception:  # a custom message the wire format does not know
        return json.dumps(repr(value))


def _error_type(error: BaseException) -> str:
    if isinstance(error, ProviderError):
        return error.kind
    return type(error).__qualname__


def _set_error(span: Any, error: BaseException | None, text: str | None) -> None:
    from opentelemetry.trace import Status, StatusCode

    if error is not None:
        span.set_attribute("error.type", _error_type(error))
        if not isinstance(error, ProviderError):
            span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, text or (exception_text(error) if error else None)))


class RunTracing:
    """The spans of one run: its ``invoke_agent`` span and the open ``chat`` span."""

    __slots__ = ("_chat", "_context", "_span", "_tracer")

    def __init__(self, tracer: Any, span: Any, context: Any) -> None:
        self._tracer = tracer
        self._span = span
        self._context = context  # the run span's context: the parent of its chat spans
        self._chat: Any = None

    async def run(self, body: Callable[[], Awaitable[T]]) -> T:
        """``await body()`` with the run's span current; ends the open spans after it.

        On cancellation the spans end (the request's marked cancelled) and ``Cancelled``
        propagates.
        """
        from opentelemetry import context

        token = context.attach(self._context)
        try:
            return await body()
        except BaseException as exc:
            self._end_chat_cancelled(exc)
            if not isinstance(exc, Exception):
                self._span.set_attribute("error.type", "cancelled")
            raise
        finally:
            context.detach(token)

    def end(self, messages: list[Any], error: BaseException | None) -> None:
        """End the run's span: ``error`` is the run's failure (None: it ended normally or
        was aborted, as its last assistant message says)."""
        span = self._span
        self._end_chat_cancelled(None)
        last = next((m for m in reversed(messages) if hasattr(m, "stop_reason")), None)
        reason = getattr(last, "stop_reason", None)
        if error is not None or reason == "error":
            _set_error(span, error, getattr(last, "error_message", None))
        elif reason == "aborted":
            span.set_attribute("error.type", "cancelled")
        span.end()

    def start_chat(self, model: Model, context: Context) -> None:
        """A model request begins (after the request hooks: the model is the one used)."""
        from opentelemetry.trace import SpanKind

        self._end_chat_cancelled(None)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.id,
        }
        host = urlsplit(model.base_url).hostname if model.base_url else None
        if host:
            attributes["server.address"] = host
        if _capture():
            attributes["gen_ai.system_instructions"] = context.system_prompt
            attributes["gen_ai.input.messages"] = _json(list(context.messages))
        self._chat = self._tracer.start_span(
            f"chat {model.id}", context=self._context, kind=SpanKind.CLIENT, attributes=attributes
        )

    def end_chat(self, message: AssistantMessage, failure: BaseException | None) -> None:
        """The request's response is final: usage, finish reason, errors."""
        span, self._chat = self._chat, None
        if span is None:
            return
        usage = message.usage
        span.set_attribute("gen_ai.response.model", message.response_model or message.model)
        if message.response_id:
            span.set_attribute("gen_ai.response.id", message.response_id)
        span.set_attribute("gen_ai.usage.input_tokens", usage.input)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output)
        if usage.cache_read:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read)
        reason = message.stop_reason
        span.set_attribute("gen_ai.response.finish_reasons", [_FINISH.get(reason, reason)])
        if reason == "error":
            _set_error(span, failure, message.error_message)
        elif reason == "aborted":
            span.set_attribute("error.type", "cancelled")
        if _capture():
            span.set_attribute("gen_ai.output.messages", _json([message]))
        span.end()

    def _end_chat_cancelled(self, exc: BaseException | None) -> None:
        span, self._chat = self._chat, None
        if span is not None:
            span.set_attribute("error.type", "cancelled" if exc is None or not isinstance(
                exc, Exception) else _error_type(exc))  # fmt: skip
            span.set_attribute("gen_ai.response.finish_reasons", ["aborted"])
            span.end()


def tracing_on() -> bool:
    """Whether a run starting now is traced (:func:`start_run` would make its spans)."""
    return _tracer() is not None


def start_run(model: Model, session_id: str | None) -> RunTracing | None:
    """The spans of a run that starts now, or None when tracing is off."""
    tracer = _tracer()
    if tracer is None:
        return None
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": model.provider,
        "gen_ai.request.model": model.id,
    }
    if session_id:
        attributes["gen_ai.conversation.id"] = session_id
    span = tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, attributes=attributes)
    return RunTracing(tracer, span, trace.set_span_in_context(span))


def start_tool(call: ToolCall, description: str) -> tuple[Any, Any] | None:
    """Start (and make current in this task) the span of a tool call; None when off.

    Uses the tracer the run's :func:`start_run` settled on (a tool call always runs inside a
    run), so a tool call costs no look-up of the global provider."""
    tracer = _settings.tracer
    if tracer is None:
        return None
    from opentelemetry import context, trace

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": description,
    }
    if _capture():
        attributes["gen_ai.tool.call.arguments"] = json.dumps(call.arguments, default=repr)
    span = tracer.start_span(f"execute_tool {call.name}", attributes=attributes)
    return span, context.attach(trace.set_span_in_context(span))


def end_tool(
    started: tuple[Any, Any], result: Any, is_error: bool, error: BaseException | None
) -> None:
    """End a tool call's span: ``result`` None means it was cancelled."""
    from opentelemetry import context

    span, token = started
    context.detach(token)
    if result is None:
        span.set_attribute("error.type", "cancelled")
    elif is_error:
        details = getattr(result, "details", None)
        timed_out = isinstance(details, dict) and details.get("timed_out")
        kind = "timeout" if timed_out else None
        if error is not None:
            span.set_attribute("error.type", _error_type(error))
            span.record_exception(error)
        else:
            span.set_attribute("error.type", kind or "tool_error")
        from opentelemetry.trace import Status, StatusCode

        texts = [getattr(block, "text", "") for block in getattr(result, "content", ())]
        span.set_status(Status(StatusCode.ERROR, " ".join(t for t in texts if t)[:500] or None))
    if result is not None and _capture():
        span.set_attribute("gen_ai.tool.call.result", _json(list(result.content)))
    span.end()
