"""``stream_simple`` and ``complete_simple``: one request to whichever API a model speaks."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, aclosing

import trio

from ..events import StreamDone, StreamError, StreamEvent
from ..messages import AssistantMessage, Context
from ..models import Model
from ._builder import MessageBuilder
from ._failure import redact
from ._options import StreamOptions
from ._registry import ApiStreamFunction, get_api
from ._stream import WireApi

__all__ = ["complete_simple", "stream_simple"]


def stream_simple(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
    """Stream one response from ``model``: ``async with stream_simple(...) as events``.

    This is the default ``stream_fn``. It never raises for a provider or runtime failure: the
    stream ends with :class:`pt.StreamError` carrying an assistant message whose
    ``error_message`` says what happened. An unknown ``model.api`` is a programmer error and
    raises :class:`pt.ProviderNotFoundError` right here. On cancellation nothing more is
    emitted and ``trio.Cancelled`` propagates; leaving the block closes the HTTP response.

    Raises:
        pt.ProviderNotFoundError: no API is registered for ``model.api`` (a programmer
            error: a hand-made :class:`pt.Model`, or a provider module not imported).
        TypeError: ``model`` is not a :class:`pt.Model` or ``context`` not a
            :class:`pt.Context` (e.g. a plain string).
    """
    _check_arguments(model, context)
    api = get_api(model.api)
    options = options or StreamOptions()
    if isinstance(api, WireApi):  # its one generator never raises: no wrapper needed
        return aclosing(api(model, context, options))
    return aclosing(_guarded(api, model, context, options))


def _check_arguments(model: object, context: object) -> None:
    """Refuse the common mix-ups at the call, with what to write instead."""
    if not isinstance(model, Model):
        raise TypeError(
            f"model must be a pt.Model, got {type(model).__name__}: "
            "use pt.get_model('provider', 'model-id')"
        )
    if not isinstance(context, Context):
        example = f"pt.UserMessage({context!r:.40})" if isinstance(context, str) else "..."
        raise TypeError(
            f"context must be a pt.Context, got {type(context).__name__}: write "
            f"pt.Context(messages=[{example}]) (system_prompt= and tools= are optional)"
        )


async def _guarded(
    api: ApiStreamFunction, model: Model, context: Context, options: StreamOptions
) -> AsyncGenerator[StreamEvent, None]:
    """Turn an exception escaping a provider (one registered by an application, the faux
    model) into the StreamError it should have been."""
    try:
        async with aclosing(api(model, context, options)) as events:
            async for event in events:
                yield event
    except Exception as exc:
        if isinstance(exc.__context__, trio.Cancelled | GeneratorExit):
            raise  # it failed while being cancelled or closed: that is what is going on
        builder = MessageBuilder(model)
        yield builder.error(redact(f"{type(exc).__name__}: {exc}", [options.api_key]))


async def complete_simple(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessage:
    """The final assistant message of one request (an error message on failure).

    Failures of the request (HTTP, network, timeouts, bad responses) never raise: they come
    back as an assistant message with ``stop_reason="error"`` and its ``error_message``.
    Cancellation propagates, as in :func:`stream_simple`.

    Raises:
        pt.ProviderNotFoundError: no API is registered for ``model.api`` (a programmer error).
        TypeError: ``context`` is not a :class:`pt.Context` (e.g. ``"Hi!"``), or ``model``
            not a :class:`pt.Model`.
    """
    async with stream_simple(model, context, options) as events:
        async for event in events:
            if isinstance(event, StreamDone):
                return event.message
            if isinstance(event, StreamError):
                return event.error
    return MessageBuilder(model).error("stream ended without a done or error event").error
