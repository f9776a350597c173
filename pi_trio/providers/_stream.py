"""What every HTTP wire API shares: keys, options, cost, and the streaming driver.

A wire API module supplies two things: a function that turns (model, context,
options, key) into a :class:`WireRequest`, and a :class:`Decoder` that turns
parsed SSE events into stream events using the foundation's
:class:`MessageBuilder`. :func:`run_wire_stream` connects them through
:class:`EventSource` and applies the contract every provider must keep:

* failures (missing key, HTTP errors, timeouts, broken or malformed streams,
  error events) end the stream with one ``StreamError`` whose message names
  what happened, with the API key masked, and are never raised;
* ``StreamStart`` is emitted when the first event arrives; retries before it
  are invisible to the caller;
* on cancellation nothing more is emitted: ``Cancelled`` goes up and the
  response is closed on the way (shielded, bounded);
* the generator yields only outside cancel scopes and nurseries: every timeout
  lives inside a single await of :class:`EventSource`.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from contextlib import aclosing
from typing import Any, Protocol, TypeAlias
from urllib.parse import urlsplit

import attrs

from ..events import StreamEvent
from ..messages import Context, Usage
from ..models import Model, get_env_api_key
from ._builder import MessageBuilder
from ._http import EventSource, ProviderFailure, RequestPolicy, default_client, redact
from ._options import StreamOptions
from ._sse import SSEEvent

__all__ = [
    "Decoder",
    "DecoderFactory",
    "RequestBuilder",
    "WireRequest",
    "compute_cost",
    "parse_event_json",
    "resolve_api_key",
    "run_wire_stream",
    "wire_api",
]


@attrs.frozen
class WireRequest:
    """One POST: where, which headers (holding the key: never shown), what body."""

    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Mapping[str, Any]


class Decoder(Protocol):
    """Turns one response's events into stream events.

    ``feed`` returns the events to emit for one SSE event and raises
    :class:`ProviderFailure` for an error reported inside the stream.
    ``finish`` is called at the end of the body: it closes open blocks and
    returns the final events, ending with ``StreamDone`` (or raises
    :class:`ProviderFailure` when the stream stopped before its end marker).
    """

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]: ...

    def finish(self) -> Iterable[StreamEvent]: ...


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_api_key(model: Model, options: StreamOptions) -> str | None:
    """The key from the options, else the provider's environment variable.

    A local server (a loopback ``base_url``: Ollama, llama.cpp, vLLM on this
    machine) needs none, so for it a missing key is the empty string.
    """
    key = options.api_key or get_env_api_key(model.provider)
    if key:
        return key
    return "" if _is_loopback(model.base_url) else None


def compute_cost(model: Model, usage: Usage) -> Usage:
    """Fill ``usage.cost`` from ``model.cost`` (dollars per million tokens)."""
    rates = model.cost
    cost = usage.cost
    cost.input = rates.input * usage.input / 1_000_000
    cost.output = rates.output * usage.output / 1_000_000
    cost.cache_read = rates.cache_read * usage.cache_read / 1_000_000
    cost.cache_write = rates.cache_write * usage.cache_write / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return usage


def parse_event_json(event: SSEEvent) -> Any:
    """The JSON payload of an event; a clear :class:`ProviderFailure` when it is not JSON."""
    try:
        return json.loads(event.data)
    except ValueError as exc:
        # the whole data: run_wire_stream redacts secrets first and shortens afterwards
        raise ProviderFailure(
            f"invalid JSON in event {event.event!r}: {exc}; data: {event.data}"
        ) from exc


def policy_from(options: StreamOptions) -> RequestPolicy:
    return RequestPolicy(
        timeout=options.timeout,
        first_byte_timeout=options.first_byte_timeout,
        idle_timeout=options.idle_timeout,
        max_retries=options.max_retries,
        max_retry_delay=options.max_retry_delay,
    )


async def run_wire_stream(
    builder: MessageBuilder,
    request: WireRequest,
    decoder: Decoder,
    options: StreamOptions,
    api_key: str | None,
    *,
    emit_start: bool = True,
) -> AsyncGenerator[StreamEvent, None]:
    """Send ``request`` and yield what ``decoder`` makes of the answer (see module doc).

    ``emit_start=False`` leaves ``StreamStart`` to the decoder (the proxy protocol sends its
    own "start" event).
    """
    client = options.http_client or default_client()
    source = EventSource(
        client,
        request.url,
        headers=request.headers,
        body=request.body,
        policy=policy_from(options),
        secrets=[api_key],
    )
    started = False
    failure: ProviderFailure | None = None
    try:
        while True:
            try:
                event = await source.next_event()
                if not started:
                    started = True
                    if emit_start:
                        yield builder.start()
                try:
                    out = list(decoder.finish() if event is None else decoder.feed(event))
                except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
                    name = "end of stream" if event is None else f"event {event.event!r}"
                    message = f"unexpected {name} from the provider: {type(exc).__name__}: {exc}"
                    raise ProviderFailure(message) from exc
                for stream_event in out:
                    yield stream_event
            except ProviderFailure as exc:
                failure = exc
                break
            if event is None:
                return
    finally:
        await source.aclose()
    yield builder.error(_shorten(redact(str(failure), [api_key])))


def _shorten(text: str, limit: int = 2000) -> str:
    """Cut a long error message (after redaction: a key cut in half would not match)."""
    return text if len(text) <= limit else text[:limit] + "..."


RequestBuilder: TypeAlias = Callable[[Model, Context, StreamOptions, str], WireRequest]
DecoderFactory: TypeAlias = Callable[[Model, MessageBuilder], Decoder]


def wire_api(
    build_request: RequestBuilder, decoder: DecoderFactory, doc: str
) -> Callable[[Model, Context, StreamOptions], AsyncGenerator[StreamEvent, None]]:
    """The registry's stream function of one wire API, from its two halves: how a request is
    built and how the answer's events are decoded. A missing key ends the stream at once."""

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncGenerator[StreamEvent, None]:
        builder = MessageBuilder(model)
        api_key = resolve_api_key(model, options)
        if api_key is None:
            yield builder.error(f"No API key for provider: {model.provider}")
            return
        request = build_request(model, context, options, api_key)
        events = run_wire_stream(builder, request, decoder(model, builder), options, api_key)
        async with aclosing(events):
            async for event in events:
                yield event

    stream.__doc__ = doc
    return stream
