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
import logging
import re
import traceback
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeAlias
from urllib.parse import urlsplit

import attrs
import trio

from .._errors import ProviderError
from .._headers import header_secrets
from .._logging import providers_logger
from ..events import StreamError, StreamEvent
from ..messages import Context
from ..models import ENV_API_KEYS, Model, get_env_api_key
from ..system_messages import collapse_system_messages
from ._builder import MessageBuilder
from ._failure import ProviderFailure, redact, shorten
from ._http import Exchange, default_client, open_exchange, safe_url
from ._log_guard import guard_secrets
from ._options import StreamOptions
from ._retry import RequestPolicy
from ._sse import SSEEvent
from ._sse_reader import SSE_FRAMING, Framing, SSEReader
from ._stream_end import ends_on_its_own, read_past_the_end

__all__ = [
    "Decoder",
    "DecoderFactory",
    "PreparedWireApi",
    "RequestBuilder",
    "RequestPreparer",
    "WireApi",
    "WireRequest",
    "failed_event",
    "parse_event_json",
    "resolve_api_key",
    "stream_wire",
]

_DECODER_BUGS = (KeyError, TypeError, AttributeError, IndexError, ValueError)
_HEADER_UNSAFE = re.compile(r"[^\x20-\x7e]")  # what h11 refuses in a header value


@attrs.frozen
class WireRequest:
    """One POST: where, which headers (holding the key: never shown), what body (a JSON
    object, or the encoded bytes), how the response frames its events, and the credentials
    besides the API key that must never be shown (a cloud token, a session token)."""

    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Mapping[str, Any] | bytes
    framing: Framing = SSE_FRAMING
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)


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


def _key_hint(provider: str) -> str:
    """What to do about a missing key: the environment variable(s) to set."""
    names = ENV_API_KEYS.get(provider, ())
    if names:
        return f"set {' or '.join(names)}, or pass StreamOptions(api_key=...) or get_api_key"
    return "pass StreamOptions(api_key=...) or get_api_key"


def parse_event_json(event: SSEEvent) -> Any:
    """The JSON payload of an event.

    Raises:
        ProviderFailure: the data is not JSON (the message quotes it; it is masked and
            shortened when it becomes the error_message).
    """
    try:
        return json.loads(event.data)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to read
        raise ProviderFailure(
            f"invalid JSON in event {event.event!r}: {exc}; data: {event.data}", kind="protocol"
        ) from exc


async def stream_wire(
    builder: MessageBuilder,
    request: WireRequest | Callable[[], Awaitable[WireRequest]],
    decoder: Decoder,
    options: StreamOptions,
    secrets: Iterable[str | None] = (),
    *,
    emit_start: bool = True,
    error_prefix: str = "",
    policy: RequestPolicy | None = None,
    base_url: str | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Send ``request`` and yield what ``decoder`` makes of the answer (see the module doc).

    Args:
        builder: the message the decoder builds; errors are reported on it.
        request: the POST to send (with ``options.http_client`` or the default client), or
            an async function making it (credentials fetched first); a failure there ends
            the stream like any other.
        decoder: turns the response's SSE events into stream events.
        options: the request's options (deadlines, retries, ``max_event_bytes``).
        secrets: masked in every error_message and in httpx/httpcore log records.
        emit_start: ``False`` leaves ``StreamStart`` to the decoder (the proxy protocol
            sends its own "start" event).
        error_prefix: put before the error_message of a failure found here (the transport,
            the stream, a decoder's :class:`ProviderFailure`), not before a ``StreamError``
            the decoder returns itself.
        policy: deadlines and retries; default :meth:`RequestPolicy.from_options`.
        base_url: where a failure of an async ``request`` is said to have happened.

    Never raises for a failure. On cancellation (or ``aclose``) ``Cancelled`` (or
    ``GeneratorExit``) propagates, nothing more is emitted and the response is closed.
    """
    masked: tuple[str, ...] = tuple(s for s in secrets if s)
    policy = policy or RequestPolicy.from_options(options)
    exchange: Exchange | None = None
    reader: SSEReader | None = None
    url = request.url if isinstance(request, WireRequest) else base_url
    try:
        deadline = policy.deadline(trio.current_time())
        if not isinstance(request, WireRequest):
            request = await _prepared(request, policy, deadline, url or "", masked)
            url = request.url
        masked += tuple(s for s in request.secrets if s) + header_secrets(request.headers)
        with guard_secrets(masked):
            client = options.http_client or default_client()
            body = request.body
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            attempt = 0
            while True:  # attempts, until the first event (or the end of the body) arrives
                attempt += 1
                try:
                    http_request = client.build_request(
                        "POST", request.url, headers=request.headers, content=content
                    )
                    framing = request.framing
                    exchange = await open_exchange(
                        client, http_request, policy, deadline, framing.media_type
                    )
                    reader = SSEReader(exchange.response, policy, deadline, framing)
                    event = await reader.next_event()
                    break
                except ProviderFailure as failure:
                    await _close(reader, exchange)
                    reader = exchange = None
                    where = f"request to {safe_url(request.url)}"
                    await _wait_to_retry(failure, attempt, policy, deadline, masked, where)
            assert reader is not None
            if emit_start:
                yield builder.start()
            while True:
                try:
                    out = list(decoder.finish() if event is None else decoder.feed(event))
                except _DECODER_BUGS as exc:
                    name = "end of stream" if event is None else f"event {event.event!r}"
                    raise ProviderFailure(
                        f"unexpected {name} from the provider: {type(exc).__name__}: {exc}",
                        kind="protocol",
                    ) from exc
                for stream_event in out:
                    yield stream_event
                if event is None:
                    return
                if ends_on_its_own(decoder):
                    await read_past_the_end(reader)
                    event = None
                else:
                    event = await reader.next_event()
    except ProviderFailure as failure:
        message = error_prefix + str(failure)
        problem: BaseException = failure
    except Exception as exc:
        if isinstance(exc.__context__, trio.Cancelled | GeneratorExit):
            raise  # it failed while being cancelled or closed: that is what is going on
        message = f"{error_prefix}{type(exc).__name__}: {exc}"
        problem = exc
    finally:
        await _close(reader, exchange)
    yield failed_event(builder, problem, shorten(redact(message, masked)), url, masked)


async def _close(reader: SSEReader | None, exchange: Exchange | None) -> None:
    if reader is not None:
        await reader.aclose()
    if exchange is not None:
        await exchange.aclose()


def failed_event(
    builder: MessageBuilder,
    problem: BaseException,
    text: str,
    url: str | None,
    secrets: Iterable[str] = (),
) -> StreamError:
    """The ``StreamError`` ending a failed request, with its ``pt.ProviderError`` record, and
    the one log record of the failure: a line at ERROR on ``pi_trio.providers``.

    ``text`` is the error_message, already masked; every field of the record is masked too.
    An unexpected failure (a bug, not a :class:`ProviderFailure`) carries its traceback in
    ``exc_info``; an expected one's (the transport error behind a connection failure) goes
    in a DEBUG record. Either traceback is formatted and masked here (``exc_text``), so a
    handler prints it masked.
    """
    message = builder.message
    if isinstance(problem, ProviderFailure):
        kind, status, code = problem.kind, problem.status, problem.code
        retryable, retry_after = problem.retryable, problem.retry_after
        cause = problem.__cause__
    else:
        kind, status, code, retryable, retry_after = "protocol", None, None, False, None
        cause = problem
    where = None if url is None else safe_url(redact(url, secrets))
    record = ProviderError(
        text,
        kind=kind,
        status=status,
        retryable=retryable,
        retry_after=retry_after,
        url=where,
        code=None if code is None else redact(code, secrets),
        provider=message.provider,
    )
    line = ("%s request to %s failed (%s): %s", message.provider, where, kind, text)
    if cause is None or isinstance(problem, ProviderFailure):
        providers_logger.error(*line)
        if cause is not None:
            _log_traceback(logging.DEBUG, cause, secrets, "the traceback of: " + line[0], line[1:])
    else:
        _log_traceback(logging.ERROR, cause, secrets, line[0], line[1:])
    event = builder.error(text)
    event.provider_error = record
    return event


def _log_traceback(
    level: int, cause: BaseException, secrets: Iterable[str], message: str, args: tuple[Any, ...]
) -> None:
    """A record of ``message`` whose ``exc_info`` is ``cause``, its traceback masked: the
    formatted text is set as the record's ``exc_text``, which handlers print as it is."""
    if not providers_logger.isEnabledFor(level):
        return
    record = providers_logger.makeRecord(
        providers_logger.name,
        level,
        __file__,
        0,
        message,
        args,
        (type(cause), cause, cause.__traceback__),
    )
    record.exc_text = redact("".join(traceback.format_exception(cause)), secrets).rstrip()
    providers_logger.handle(record)


async def _prepared(
    prepare: Callable[[], Awaitable[WireRequest]],
    policy: RequestPolicy,
    deadline: float,
    url: str,
    secrets: Iterable[str],
) -> WireRequest:
    """The request ``prepare`` makes (cloud credentials first). A retryable failure of it (the
    token endpoint did not answer) is tried again as a failed request is: up to
    ``max_retries`` times of its own, with the same backoff, within the request's overall
    deadline, which also bounds the preparing itself."""
    attempt = 0
    while True:
        attempt += 1
        try:
            with trio.move_on_at(deadline):
                return await prepare()
            raise ProviderFailure(
                "preparing the request (its credentials) did not finish within the overall timeout",
                kind="timeout",
            )
        except ProviderFailure as failure:
            where = f"preparing the request to {safe_url(url)}"
            await _wait_to_retry(failure, attempt, policy, deadline, secrets, where)


async def _wait_to_retry(
    failure: ProviderFailure,
    attempt: int,
    policy: RequestPolicy,
    deadline: float,
    secrets: Iterable[str],
    what: str,
) -> None:
    """Log the retry of a failed attempt (``what``: of a request to its URL, or of preparing
    it; one INFO line, masked) and wait before it.

    Raises:
        ProviderFailure: no retry is allowed (:meth:`RequestPolicy.retry_delay`).
    """
    now = trio.current_time()
    delay = policy.retry_delay(failure, attempt=attempt, now=now, deadline=deadline)
    if providers_logger.isEnabledFor(logging.INFO):
        providers_logger.info(
            "%s failed (%s), retrying in %.2f s (retry %d of %d): %s",
            redact(what, secrets),
            failure.kind,
            delay,
            attempt,
            policy.max_retries,
            shorten(redact(str(failure), secrets), 500),
        )
    await trio.sleep(delay)


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
        url = model.base_url or None
        if api_key is None:
            text = f"No API key for provider: {model.provider} ({_key_hint(model.provider)})"
            failure = ProviderFailure(text, kind="auth")
            return _failed(failed_event(builder, failure, text, url))
        if _HEADER_UNSAFE.search(api_key):
            text = (
                f"the API key for provider {model.provider} contains a control or "
                "non-ASCII character, which an HTTP header cannot carry: check how it "
                "was read (the key is not shown)"
            )
            failure = ProviderFailure(text, kind="auth")
            return _failed(failed_event(builder, failure, text, url))
        secrets = (api_key, options.api_key, *header_secrets(options.headers))
        secrets += header_secrets(model.headers)
        try:
            context = collapse_system_messages(context)  # pi-ai 1.6's rule for these APIs
            request = self.build_request(model, context, options, api_key)
        except Exception as exc:  # e.g. a message the API cannot express
            text = f"cannot build the {model.api} request: {type(exc).__name__}: {exc}"
            text = shorten(redact(text, secrets))
            failure = ProviderFailure(text, kind="bad_request")
            failure.__cause__ = exc
            masked = tuple(s for s in secrets if s)
            return _failed(failed_event(builder, failure, text, url, masked))
        return stream_wire(builder, request, self.decoder(model, builder), options, secrets)


RequestPreparer: TypeAlias = Callable[[Model, Context, StreamOptions], Awaitable[WireRequest]]


@attrs.frozen
class PreparedWireApi:
    """The stream function of a wire API whose request needs async work first: cloud
    credentials (a token fetched in a worker thread, a signature over the body).

    ``prepare(model, context, options)`` runs inside the returned generator, so a missing
    credential or an unavailable optional library (raised as a :class:`ProviderFailure`
    naming the variable to set or the package to install) ends the stream with a
    ``StreamError`` like any other failure: never raises for one. The secrets it puts in
    :attr:`WireRequest.secrets` are masked with the key.

    Args:
        prepare: ``(model, context, options) -> WireRequest`` (async).
        decoder: ``(model, builder) -> Decoder`` for one response.
        name: the wire API's name, for ``repr``.
    """

    prepare: RequestPreparer
    decoder: DecoderFactory
    name: str

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncGenerator[StreamEvent, None]:
        builder = MessageBuilder(model)
        context = collapse_system_messages(context)  # pi-ai 1.6's rule for these APIs

        async def request() -> WireRequest:
            return await self.prepare(model, context, options)

        return stream_wire(
            builder,
            request,
            self.decoder(model, builder),
            options,
            (options.api_key,),
            base_url=model.base_url or None,
        )
