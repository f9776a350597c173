"""The wire-stream seam: one async generator per request, shared by every HTTP wire API.

A wire API supplies two halves: a function that turns (model, context, options, key) into a
:class:`WireRequest`, and a :class:`Decoder` that turns parsed SSE events into stream events
with the foundation's :class:`MessageBuilder`. :class:`WireApi` joins them into the
registry's stream function; :func:`stream_wire` is the generator that drives one request
(and the seam the proxy client uses with its own decoder). It keeps the contract every
provider must keep:

* failures (HTTP errors, timeouts, broken or malformed streams, error events, a missing
  key, even a bug in a decoder) end the stream with one ``StreamError`` whose message
  names what happened, with every secret masked, and are never raised;
* ``StreamStart`` is emitted when the first event arrives; retries before it (see
  :mod:`._retry`) are invisible to the caller;
* on cancellation nothing more is emitted: ``Cancelled`` goes up and the response is
  closed on the way (shielded, bounded);
* the generator yields only outside cancel scopes and nurseries: every deadline lives
  inside a single await of the transport or the SSE reader.

There is one generator between the network and the caller: ``stream_simple`` hands a
:class:`WireApi`'s generator out as it is, with no re-yielding wrapper.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeAlias
from urllib.parse import urlsplit

import attrs
import trio

from ..events import StreamEvent
from ..messages import Context, Usage
from ..models import Model, get_env_api_key
from ._builder import MessageBuilder
from ._failure import ProviderFailure, redact, shorten
from ._http import Exchange, default_client, open_exchange
from ._log_guard import guard_secrets
from ._options import StreamOptions
from ._retry import RequestPolicy
from ._sse import SSEEvent
from ._sse_reader import SSEReader

__all__ = [
    "Decoder",
    "DecoderFactory",
    "RequestBuilder",
    "WireApi",
    "WireRequest",
    "compute_cost",
    "parse_event_json",
    "resolve_api_key",
    "stream_wire",
]

_DECODER_BUGS = (KeyError, TypeError, AttributeError, IndexError, ValueError)
_HEADER_UNSAFE = re.compile(r"[^\x20-\x7e]")  # what h11 refuses in a header value


@attrs.frozen
class WireRequest:
    """One POST: where, which headers (holding the key: never shown), what body (a JSON
    object, or the encoded bytes)."""

    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Mapping[str, Any] | bytes


class Decoder(Protocol):
    """Turns one response's events into stream events.

    ``feed`` returns the events to emit for one SSE event and raises
    :class:`ProviderFailure` for an error reported inside the stream.
    ``finish`` is called at the end of the body: it closes open blocks and
    returns the final events, ending with ``StreamDone`` (or raises
    :class:`ProviderFailure` when the stream stopped before its end marker).
    A ``KeyError``/``TypeError``/``ValueError``/... from either is reported as an
    unexpected event from the provider.
    """

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]: ...

    def finish(self) -> Iterable[StreamEvent]: ...


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (a local server needs no key)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_api_key(model: Model, options: StreamOptions) -> str | None:
    """The key from the options, else the provider's environment variable, without
    surrounding whitespace (a key read from a file keeps its newline otherwise).

    A local server (a loopback ``base_url``: Ollama, llama.cpp, vLLM on this
    machine) needs none, so for it a missing key is the empty string.
    """
    key = (options.api_key or get_env_api_key(model.provider) or "").strip()
    if key:
        return key
    return "" if is_loopback(model.base_url) else None


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
    """The JSON payload of an event.

    Raises:
        ProviderFailure: the data is not JSON (the message quotes it; it is masked and
            shortened when it becomes the error_message).
    """
    try:
        return json.loads(event.data)
    except ValueError as exc:
        raise ProviderFailure(
            f"invalid JSON in event {event.event!r}: {exc}; data: {event.data}"
        ) from exc


async def stream_wire(
    builder: MessageBuilder,
    request: WireRequest,
    decoder: Decoder,
    options: StreamOptions,
    secrets: Iterable[str | None] = (),
    *,
    emit_start: bool = True,
    error_prefix: str = "",
    policy: RequestPolicy | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Send ``request`` and yield what ``decoder`` makes of the answer (see the module doc).

    Args:
        builder: the message the decoder builds; errors are reported on it.
        request: the POST to send (with ``options.http_client`` or the default client).
        decoder: turns the response's SSE events into stream events.
        options: the request's options (deadlines, retries, ``max_event_bytes``).
        secrets: masked in every error_message and in httpx/httpcore log records.
        emit_start: ``False`` leaves ``StreamStart`` to the decoder (the proxy protocol
            sends its own "start" event).
        error_prefix: put before the error_message of a failure found here (the transport,
            the stream, a decoder's :class:`ProviderFailure`), not before a ``StreamError``
            the decoder returns itself.
        policy: deadlines and retries; default :meth:`RequestPolicy.from_options`.

    Never raises for a failure. On cancellation (or ``aclose``) ``Cancelled`` (or
    ``GeneratorExit``) propagates, nothing more is emitted and the response is closed.
    """
    masked: tuple[str, ...] = tuple(s for s in secrets if s)
    policy = policy or RequestPolicy.from_options(options)
    exchange: Exchange | None = None
    reader: SSEReader | None = None
    try:
        with guard_secrets(masked):
            client = options.http_client or default_client()
            body = request.body
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            deadline = policy.deadline(trio.current_time())
            attempt = 0
            while True:  # attempts, until the first event (or the end of the body) arrives
                attempt += 1
                try:
                    http_request = client.build_request(
                        "POST", request.url, headers=request.headers, content=content
                    )
                    exchange = await open_exchange(client, http_request, policy, deadline)
                    reader = SSEReader(exchange.response, policy, deadline)
                    event = await reader.next_event()
                    break
                except ProviderFailure as failure:
                    await _close(reader, exchange)
                    reader = exchange = None
                    now = trio.current_time()
                    await trio.sleep(
                        policy.retry_delay(failure, attempt=attempt, now=now, deadline=deadline)
                    )
            assert reader is not None
            if emit_start:
                yield builder.start()
            while True:
                try:
                    out = list(decoder.finish() if event is None else decoder.feed(event))
                except _DECODER_BUGS as exc:
                    name = "end of stream" if event is None else f"event {event.event!r}"
                    raise ProviderFailure(
                        f"unexpected {name} from the provider: {type(exc).__name__}: {exc}"
                    ) from exc
                for stream_event in out:
                    yield stream_event
                if event is None:
                    return
                event = await reader.next_event()
    except ProviderFailure as failure:
        message = error_prefix + str(failure)
    except Exception as exc:
        if isinstance(exc.__context__, trio.Cancelled | GeneratorExit):
            raise  # it failed while being cancelled or closed: that is what is going on
        message = f"{error_prefix}{type(exc).__name__}: {exc}"
    finally:
        await _close(reader, exchange)
    yield builder.error(shorten(redact(message, masked)))


async def _close(reader: SSEReader | None, exchange: Exchange | None) -> None:
    if reader is not None:
        await reader.aclose()
    if exchange is not None:
        await exchange.aclose()


async def _failed(event: StreamEvent) -> AsyncGenerator[StreamEvent, None]:
    """A stream of one (error) event."""
    await trio.lowlevel.checkpoint()
    yield event


RequestBuilder: TypeAlias = Callable[[Model, Context, StreamOptions, str], WireRequest]
DecoderFactory: TypeAlias = Callable[[Model, MessageBuilder], Decoder]


@attrs.frozen
class WireApi:
    """The registry's stream function of one HTTP wire API, from its two halves.

    Calling it with ``(model, context, options)`` resolves the key (a missing one, or one that
    cannot go into an HTTP header, ends the stream at once), builds the request and returns
    the :func:`stream_wire` generator itself: never raises for a failure.

    Args:
        build_request: ``(model, context, options, api_key) -> WireRequest``.
        decoder: ``(model, builder) -> Decoder`` for one response.
        name: the wire API's name, for ``repr``.
    """

    build_request: RequestBuilder
    decoder: DecoderFactory
    name: str

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncGenerator[StreamEvent, None]:
        builder = MessageBuilder(model)
        api_key = resolve_api_key(model, options)
        if api_key is None:
            return _failed(builder.error(f"No API key for provider: {model.provider}"))
        if _HEADER_UNSAFE.search(api_key):
            return _failed(
                builder.error(
                    f"the API key for provider {model.provider} contains a control or "
                    "non-ASCII character, which an HTTP header cannot carry: check how it "
                    "was read (the key is not shown)"
                )
            )
        secrets = (api_key, options.api_key)
        try:
            request = self.build_request(model, context, options, api_key)
        except Exception as exc:  # e.g. a message the API cannot express
            text = f"cannot build the {model.api} request: {type(exc).__name__}: {exc}"
            return _failed(builder.error(shorten(redact(text, secrets))))
        return stream_wire(builder, request, self.decoder(model, builder), options, secrets)
