"""The HTTP layer shared by every wire API: one client, SSE, deadlines, retries.

Layering (as in httpx's transports): a provider module builds the request
body and interprets events; this module owns everything about getting those
events over the network:

* :func:`default_client` keeps one ``httpx.AsyncClient`` per ``trio.run`` (a
  :class:`trio.lowlevel.RunVar`), created lazily, closed when the run ends by a
  system task that only waits for that moment (shielded, bounded). An injected
  client is never closed here: its owner closes it.
* :func:`send_guarded` works around encode/httpcore#1093: a request cancelled
  while it waits in the pool can leave a freshly assigned connection stuck in
  the pool forever. The send runs shielded until httpcore reports (through the
  ``trace`` extension) that the request is being written on its connection;
  from there httpcore itself cleans up on cancellation, so the shield is
  dropped and cancellation is prompt again. For the default client a
  :class:`trio.Semaphore` sized to the pool admits requests, so the pool never
  queues and the shielded window is only the connect.
* :class:`EventSource` is one streamed request: it retries (exponential
  backoff with jitter, Retry-After honoured up to a cap) on connection errors,
  first-byte timeouts and 408/429/500/502/503/504/529, but only until the first
  event has been handed out and never past the overall deadline. It applies a
  first-byte timeout (until the response headers), an idle timeout measured
  between *parsed events* (keep-alive comments do not reset it) and the
  overall deadline, each around a single await: the caller's async generator
  never yields inside one of our cancel scopes.

Failures surface as :class:`ProviderFailure` whose message says what happened
and has every occurrence of the API key replaced by ``***``.
"""

from __future__ import annotations

import datetime
import email.utils
import http
import json
import math
import random
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import httpx
import trio

from .._errors import PiError
from ._sse import SSEEvent, SSEParser

__all__ = [
    "RETRYABLE_STATUS",
    "EventSource",
    "ProviderFailure",
    "RequestPolicy",
    "default_client",
    "pool_in_use",
    "redact",
    "send_guarded",
]

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Statuses worth retrying; 400/401/403/404 and the like never are."""

DEFAULT_MAX_CONNECTIONS = 64
_CLOSE_GRACE = 2.0  # seconds allowed for closing a response or the default client
_ERROR_BODY_LIMIT = 64 * 1024
_REDACTED = "***"


class ProviderFailure(PiError):
    """A request that failed; ``str(exc)`` is the error_message for the user.

    Internal to the providers: ``stream_simple`` turns it into a ``StreamError``,
    so callers never see it raised.

    ``retryable`` says whether trying again could help; ``retry_after`` is the
    server's requested wait in seconds, when it sent one.
    """

    def __init__(
        self, message: str, *, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each (non-trivial) secret replaced by ``***``."""
    for secret in secrets:
        # also the key without surrounding whitespace: a key read from a file with its
        # newline shows up in httpx/h11 errors as repr(bytes), where "\n" is escaped
        for candidate in {secret, secret.strip()} if secret else ():
            if len(candidate) >= 4 and candidate in text:
                text = text.replace(candidate, _REDACTED)
    return text


class RequestPolicy:
    """Timeouts (seconds; ``None`` = no limit) and the retry budget of one request."""

    __slots__ = (
        "first_byte_timeout",
        "idle_timeout",
        "max_retries",
        "max_retry_delay",
        "retry_base_delay",
        "timeout",
    )

    def __init__(
        self,
        *,
        timeout: float | None = None,
        first_byte_timeout: float | None = 60.0,
        idle_timeout: float | None = 120.0,
        max_retries: int = 2,
        max_retry_delay: float = 60.0,
        retry_base_delay: float = 0.5,
    ) -> None:
        self.timeout = timeout
        self.first_byte_timeout = first_byte_timeout
        self.idle_timeout = idle_timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self.retry_base_delay = retry_base_delay

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in sorted(self.__slots__))
        return f"RequestPolicy({fields})"


# --- the shared client -------------------------------------------------------

_DEFAULT_CLIENT: trio.lowlevel.RunVar[httpx.AsyncClient] = trio.lowlevel.RunVar(
    "pi_trio_http_client"
)
_ADMISSION: weakref.WeakKeyDictionary[httpx.AsyncClient, trio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def default_client() -> httpx.AsyncClient:
    """The client used when no ``http_client`` is given: one per ``trio.run``.

    Its own read timeout is off (our idle/first-byte deadlines replace it); it is
    closed when the run's main task has finished.
    """
    try:
        return _DEFAULT_CLIENT.get()
    except LookupError:
        pass
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(connect=30.0, read=None, write=60.0, pool=None),
        limits=httpx.Limits(max_connections=DEFAULT_MAX_CONNECTIONS, max_keepalive_connections=16),
    )
    _DEFAULT_CLIENT.set(client)
    _ADMISSION[client] = trio.Semaphore(DEFAULT_MAX_CONNECTIONS)
    trio.lowlevel.spawn_system_task(
        _close_when_run_ends, client, name="pi_trio: close default http client"
    )
    return client


async def _close_when_run_ends(client: httpx.AsyncClient) -> None:
    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_GRACE):
            await client.aclose()


def _admission_for(client: httpx.AsyncClient) -> trio.Semaphore | None:
    """The admission semaphore of ``client``: the default client's, or one made on first
    use for an injected client whose (httpx default) pool has a connection limit, so that
    its pool never queues either and the shielded window of :func:`send_guarded` stays the
    connect, instead of an unbounded wait for another request's connection."""
    admission = _ADMISSION.get(client)
    if admission is None:
        pool = getattr(getattr(client, "_transport", None), "_pool", None)
        limit = getattr(pool, "_max_connections", None)
        if isinstance(limit, int) and limit > 0:
            admission = _ADMISSION[client] = trio.Semaphore(limit)
    return admission


def pool_in_use(client: httpx.AsyncClient) -> int:
    """Connections of ``client``'s pool that are checked out (neither idle nor
    closed) plus requests still queued: 0 when nothing leaked. For tests and
    diagnostics; only understands httpx's default transport."""
    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    if pool is None:
        return 0
    busy = sum(1 for conn in pool.connections if not (conn.is_idle() or conn.is_closed()))
    return busy + len(getattr(pool, "_requests", ()))


# --- sending without leaking -------------------------------------------------

_WRITING_EVENTS = frozenset(
    {
        "connection.connect_tcp.started",  # the request owns its connection from here on
        "connection.connect_unix_socket.started",
        "http11.send_request_headers.started",
        "http2.send_request_headers.started",
    }
)


async def send_guarded(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)`` that cannot strand a pooled connection.

    See the module docstring: the send is shielded from cancellation until the
    request is being written on a connection (then httpcore's own cleanup is
    sound). With a client whose transport never reports that (a custom
    transport), the whole send stays shielded, bounded by the client's own
    timeouts. The caller's timeouts therefore belong *outside* this call.
    """
    guard = trio.CancelScope(shield=True)

    async def trace(name: str, info: Mapping[str, Any]) -> None:
        if name in _WRITING_EVENTS:
            guard.shield = False

    request.extensions = {**request.extensions, "trace": trace}
    try:
        with guard:
            response = await client.send(request, stream=True)
    except BaseException:
        # a failure while the shield held a cancellation back: the cancellation wins
        await trio.lowlevel.checkpoint_if_cancelled()
        raise
    # The shield may have absorbed the caller's cancellation: deliver it now,
    # closing the response we would otherwise strand.
    try:
        await trio.lowlevel.checkpoint_if_cancelled()
    except BaseException:
        await aclose_response(response)
        raise
    return response


async def aclose_response(response: httpx.Response) -> None:
    """Close a response even inside a cancelled scope (shielded, bounded)."""
    with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_GRACE):
        await response.aclose()


# --- one streamed request ----------------------------------------------------


class EventSource:
    """One POST whose response is an event stream; :meth:`next_event` drives it.

    Not a context manager on purpose: providers are async generators that may
    not yield inside ``async with`` blocks that hide cancel scopes, so they call
    :meth:`aclose` in their ``finally``.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        *,
        headers: Mapping[str, str],
        body: Mapping[str, Any] | bytes,
        policy: RequestPolicy,
        secrets: Iterable[str | None] = (),
    ) -> None:
        self._client = client
        self._url = url
        self._headers = dict(headers)
        self._body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self._policy = policy
        self._secrets = tuple(s for s in secrets if s)
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._parser = SSEParser()
        self._pending: deque[SSEEvent] = deque()
        self._admission: trio.Semaphore | None = None
        self._delivered = False
        self._finished = False
        self._attempt = 0
        self._deadline = math.inf
        self._idle_deadline = math.inf
        self.status_code: int | None = None

    def __repr__(self) -> str:  # headers hold the key: never show them
        return f"<EventSource {self._url!r} status={self.status_code}>"

    def _fail(self, message: str, **kwargs: Any) -> ProviderFailure:
        return ProviderFailure(redact(message, self._secrets), **kwargs)

    def _now(self) -> float:
        return trio.current_time()

    async def next_event(self) -> SSEEvent | None:
        """The next parsed event, or ``None`` at the end of the body.

        Raises :class:`ProviderFailure` for every failure, after retrying where
        allowed. Cancellation propagates untouched (the response stays open
        until :meth:`aclose`).
        """
        if self._deadline == math.inf and self._policy.timeout is not None:
            self._deadline = self._now() + self._policy.timeout
        while True:
            try:
                if self._response is None:
                    await self._open()
                event = await self._read_event()
            except ProviderFailure as failure:
                if not await self._may_retry(failure):
                    raise
                continue
            if event is not None:
                self._delivered = True
            return event

    async def _may_retry(self, failure: ProviderFailure) -> bool:
        """Close the failed attempt and sleep before the next one, if allowed."""
        await self._release()
        if not failure.retryable or self._delivered or self._attempt > self._policy.max_retries:
            return False
        policy = self._policy
        if failure.retry_after is not None:
            if failure.retry_after > policy.max_retry_delay:
                failure.args = (
                    f"{failure.args[0]} (the server asked to retry after "
                    f"{failure.retry_after:g} s, more than max_retry_delay "
                    f"{policy.max_retry_delay:g} s)",
                )
                return False
            delay = failure.retry_after
        else:
            backoff = policy.retry_base_delay * 2 ** (self._attempt - 1)
            delay = min(policy.max_retry_delay, backoff) * random.uniform(0.5, 1.0)
        if self._now() + delay >= self._deadline:
            failure.args = (
                f"{failure.args[0]} (no time left to retry within the overall timeout)",
            )
            return False
        await trio.sleep(delay)
        return True

    async def _open(self) -> None:
        """One attempt: admission, send, status check. Sets up body reading."""
        self._attempt += 1
        self._parser = SSEParser()
        self._pending.clear()
        admission = _admission_for(self._client)
        if admission is not None:
            with trio.move_on_at(self._deadline) as scope:
                await admission.acquire()
            if scope.cancelled_caught:
                raise self._overall_timeout()
            self._admission = admission
        request = self._client.build_request(
            "POST", self._url, headers=self._headers, content=self._body
        )
        first_byte = self._policy.first_byte_timeout
        limit = (
            self._deadline if first_byte is None else min(self._deadline, self._now() + first_byte)
        )
        try:
            with trio.move_on_at(limit) as scope:
                response = await send_guarded(self._client, request)
        except httpx.TimeoutException as exc:
            message = f"timeout while connecting to {request.url.host}: {_describe(exc)}"
            raise self._fail(message, retryable=True) from exc
        except httpx.TransportError as exc:
            message = f"connection to {request.url.host} failed: {_describe(exc)}"
            raise self._fail(message, retryable=True) from exc
        if scope.cancelled_caught:
            if limit == self._deadline:
                raise self._overall_timeout()
            raise self._fail(
                f"timeout: no response from the server within {first_byte:g} s", retryable=True
            )
        self._response = response
        self.status_code = response.status_code
        if response.status_code >= 400:
            raise await self._http_error(response)
        self._chunks = response.aiter_bytes()
        self._arm_idle()

    def _arm_idle(self) -> None:
        idle = self._policy.idle_timeout
        self._idle_deadline = math.inf if idle is None else self._now() + idle

    def _overall_timeout(self) -> ProviderFailure:
        return self._fail(
            f"timeout: the request exceeded its overall timeout of {self._policy.timeout:g} s"
        )

    async def _read_event(self) -> SSEEvent | None:
        while not self._pending:
            if self._finished:
                return None
            chunk = await self._read_chunk()
            if chunk is None:
                self._finished = True
                self._pending.extend(self._parser.close())
            else:
                self._pending.extend(self._parser.feed(chunk))
        self._arm_idle()
        return self._pending.popleft()

    async def _read_chunk(self) -> bytes | None:
        assert self._chunks is not None
        limit = min(self._deadline, self._idle_deadline)
        try:
            with trio.move_on_at(limit) as scope:
                return await self._chunks.__anext__()
        except StopAsyncIteration:
            return None
        except httpx.TimeoutException as exc:
            raise self._fail(f"timeout while reading the response: {_describe(exc)}") from exc
        except httpx.DecodingError as exc:  # e.g. a body that is not the gzip it claims
            raise self._fail(f"invalid response body: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            message = "connection closed by the server before the response was complete"
            raise self._fail(f"{message}: {_describe(exc)}", retryable=True) from exc
        finally:
            if scope.cancelled_caught:
                # the interrupted read left the body iterator unusable
                self._finished = True
        if limit == self._deadline:
            raise self._overall_timeout()
        idle = self._policy.idle_timeout
        raise self._fail(f"timeout: no event from the server for {idle:g} s (the stream went idle)")

    async def _http_error(self, response: httpx.Response) -> ProviderFailure:
        body = b""
        with trio.move_on_after(min(5.0, max(0.0, self._deadline - self._now()))):
            try:
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= _ERROR_BODY_LIMIT:
                        break
            except httpx.HTTPError:
                pass
        # redact before _error_text truncates: a key cut in half would not match any more
        text = _error_text(redact(body.decode("utf-8", errors="replace"), self._secrets))
        status = f"HTTP {response.status_code} {_reason(response)}".rstrip()
        message = f"{status}: {text}" if text else status
        return self._fail(
            message,
            retryable=response.status_code in RETRYABLE_STATUS,
            retry_after=_retry_after(response.headers),
        )

    async def _release(self) -> None:
        response, self._response = self._response, None
        chunks, self._chunks = self._chunks, None
        if chunks is not None:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_GRACE):
                    await aclose()
        if response is not None:
            await aclose_response(response)
        if self._admission is not None:
            self._admission.release()
            self._admission = None
        self._finished = False

    async def aclose(self) -> None:
        """Close the response and give back the connection; safe when cancelled."""
        await self._release()


def _reason(response: httpx.Response) -> str:
    if response.reason_phrase:
        return response.reason_phrase
    try:
        return http.HTTPStatus(response.status_code).phrase
    except ValueError:
        return ""


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _error_text(body: str) -> str:
    """The provider's own error message from an error body (JSON or text)."""
    text = body.strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return text[:2000]
    if isinstance(data, list) and data:
        data = data[0]  # Google sometimes wraps the error in a list
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message")
            kind = error.get("type") or error.get("status") or error.get("code")
            if isinstance(message, str) and message:
                return f"{message} ({kind})" if isinstance(kind, str) and kind else message
        elif isinstance(error, str) and error:
            return error
    return text[:2000]


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = datetime.datetime.now(datetime.UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - now).total_seconds())
