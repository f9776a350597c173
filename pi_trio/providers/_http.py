"""The transport: one client, admission, a send that cannot leak, and the response checks.

Layering (as in httpx's transports): a wire API builds the request body and interprets the
events; :mod:`._retry` decides about retries, :mod:`._sse_reader` reads events with the idle
watchdog, :func:`pi_trio.providers.stream_wire` drives them. This module gets one response:

* :func:`default_client` keeps one ``AsyncClient`` per ``trio.run`` (a
  :class:`trio.lowlevel.RunVar`), created lazily, closed when the run ends by a system task
  that only waits for that moment (shielded, bounded). An injected client is never closed
  here: its owner closes it. The client is httpx2's when httpx2 is installed, else httpx's
  (:func:`http_stack`; ``PI_TRIO_HTTP_STACK=httpx`` or ``=httpx2`` chooses).
* :func:`send_guarded` works around encode/httpcore#1093: a request cancelled while it waits
  in the pool can leave a freshly assigned connection stuck in the pool forever. The send
  runs shielded until httpcore reports (through the ``trace`` extension) that the request is
  being written on its connection; from there httpcore itself cleans up on cancellation, so
  the shield is dropped and cancellation is prompt again. A :class:`trio.Semaphore` sized to
  the pool admits requests (:func:`open_exchange`), so the pool never queues and the
  shielded window is only the connect.
* :func:`open_exchange` is one attempt: admission, the guarded send under the first-byte
  deadline, then the checks of what came back: an error status, or a 200 that is not an
  event stream (an HTML page, a JSON error), become a :class:`ProviderFailure` naming the
  status, the content type and the server's own text.
* :func:`transport_failure` is the one place where httpx's exceptions become failures.

Nothing here reads httpx's private attributes except :func:`_pool_facts` (why: see there).

The HTTP stack is imported when the default client is first made (the first request of a run
without ``http_client``), not by ``import pi_trio``: a process that only runs the faux model
or its own stream function never loads it (~9 MB of heap, ~130 modules). httpx2 (the stack of
openai, anthropic, pydantic-ai and mcp's current releases) is the same API and the same pool
(httpcore2) under new names, so everything below holds for either. The exception
classes are taken from the HTTP stacks already imported (an exception of one implies it).
"""

from __future__ import annotations

import http
import importlib
import os
import re
import sys
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import attrs
import trio

from ._failure import ProviderFailure, error_code, error_text, kind_of_status, shorten
from ._options import HttpClient
from ._retry import RETRYABLE_STATUS, RequestPolicy, parse_retry_after

if TYPE_CHECKING:  # imported by the first request that uses the default client
    import httpx

__all__ = [
    "CLOSE_GRACE",
    "Exchange",
    "aclose_response",
    "default_client",
    "http_stack",
    "open_exchange",
    "pool_in_use",
    "safe_url",
    "send_guarded",
    "transport_failure",
]

DEFAULT_MAX_CONNECTIONS = 64
CLOSE_GRACE = 2.0  # seconds allowed for closing a response or the default client
_ERROR_BODY_LIMIT = 64 * 1024  # bytes of an error body read for its message
_ERROR_BODY_WAIT = 5.0  # seconds allowed for reading them
_EVENT_STREAM = "text/event-stream"
_FIRST_BYTES = 200  # characters of a body that is not an event stream shown in the message


# --- the shared client -------------------------------------------------------

STACK_VARIABLE = "PI_TRIO_HTTP_STACK"
_STACKS = ("httpx2", "httpx")  # the preferred first

_DEFAULT_CLIENT: trio.lowlevel.RunVar[Any] = trio.lowlevel.RunVar("pi_trio_http_client")
_ADMISSION: weakref.WeakKeyDictionary[HttpClient, trio.Semaphore] = weakref.WeakKeyDictionary()


def http_stack() -> Any:
    """The module (``httpx2`` or ``httpx``) whose ``AsyncClient`` is the default client.

    ``$PI_TRIO_HTTP_STACK`` names one (``httpx`` keeps httpx even where httpx2 is installed);
    unset or empty, httpx2 when it can be imported, else httpx (a core dependency).

    Raises:
        ValueError: ``$PI_TRIO_HTTP_STACK`` is neither, or names a stack that is not
            installed (the message says how to install it).
    """
    chosen = os.environ.get(STACK_VARIABLE, "").strip().lower()
    if chosen and chosen not in _STACKS:
        raise ValueError(f"{STACK_VARIABLE} must be httpx or httpx2, not {chosen!r}")
    for name in (chosen,) if chosen else _STACKS:
        try:
            return importlib.import_module(name)
        except ImportError:
            if chosen:
                raise ValueError(
                    f"{STACK_VARIABLE}={chosen} but {chosen} is not installed "
                    "(pip install 'pi-trio[httpx2]', or unset the variable)"
                ) from None
    raise ValueError("neither httpx2 nor httpx can be imported: pip install httpx")


def default_client() -> Any:
    """The client used when no ``http_client`` is given: one per ``trio.run``, an
    ``httpx2.AsyncClient`` or an ``httpx.AsyncClient`` (:func:`http_stack`).

    Its own read timeout is off (our idle/first-byte deadlines replace it); it is
    closed when the run's main task has finished.

    Raises:
        ValueError: from :func:`http_stack` (``stream_wire`` reports it as the stream's
            error).
    """
    try:
        return _DEFAULT_CLIENT.get()
    except LookupError:
        pass
    stack = http_stack()  # the first default client of the process imports it
    client = stack.AsyncClient(
        timeout=stack.Timeout(connect=30.0, read=None, write=60.0, pool=None),
        limits=stack.Limits(max_connections=DEFAULT_MAX_CONNECTIONS, max_keepalive_connections=16),
    )
    _DEFAULT_CLIENT.set(client)
    _ADMISSION[client] = trio.Semaphore(DEFAULT_MAX_CONNECTIONS)
    trio.lowlevel.spawn_system_task(
        _close_when_run_ends, client, name="pi_trio: close default http client"
    )
    return client


async def _close_when_run_ends(client: Any) -> None:
    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_GRACE):
            await client.aclose()


@attrs.frozen
class _PoolFacts:
    limit: int | None  # max_connections, None = unlimited
    checked_out: int  # connections neither idle nor closed
    queued: int  # requests waiting for a connection


def _pool_facts(client: HttpClient) -> _PoolFacts | None:
    """What the connection pool of ``client``'s default transport holds, or ``None`` for a
    transport that is not httpx's own.

    The only reader of httpx/httpcore private attributes (``AsyncClient._transport``,
    ``AsyncHTTPTransport._pool``, ``AsyncConnectionPool._max_connections`` and
    ``._requests``), because neither library exposes the pool: its size is needed to admit
    no more requests than it has connections (so a pooled wait never happens inside the
    shield of :func:`send_guarded`), and its occupancy to prove that nothing leaked
    (:func:`pool_in_use`). Every read is defensive: a change inside httpx makes this return
    ``None`` (no admission, no diagnostics), never fail a request.
    """
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    connections = getattr(pool, "connections", None)
    if pool is None or not isinstance(connections, list):
        return None
    limit = getattr(pool, "_max_connections", None)
    checked_out = sum(1 for conn in connections if not (conn.is_idle() or conn.is_closed()))
    return _PoolFacts(
        limit if isinstance(limit, int) and limit > 0 else None,
        checked_out,
        len(getattr(pool, "_requests", ())),
    )


def pool_in_use(client: HttpClient) -> int:
    """Connections of ``client``'s pool that are checked out plus requests still queued:
    0 when nothing leaked. For tests and diagnostics; 0 for a transport that is not
    httpx's default one."""
    facts = _pool_facts(client)
    return 0 if facts is None else facts.checked_out + facts.queued


def _admission_for(client: HttpClient) -> trio.Semaphore | None:
    """The admission semaphore of ``client``: the default client's, or one made on first
    use for an injected client whose pool has a connection limit, so that its pool never
    queues either and the shielded window of :func:`send_guarded` stays the connect."""
    admission = _ADMISSION.get(client)
    if admission is None:
        facts = _pool_facts(client)
        if facts is not None and facts.limit is not None:
            admission = _ADMISSION[client] = trio.Semaphore(facts.limit)
    return admission


# --- httpx's exceptions ------------------------------------------------------


def http_errors() -> tuple[type[Exception], ...]:
    """The base exception classes of the HTTP stacks a client may come from: httpx's and
    httpx2's, each once it is imported (a client of either imported it already, and none of
    its exceptions exists before). Evaluated where an exception is caught, so importing
    pi_trio imports neither."""
    return tuple(
        stack.HTTPError
        for stack in (sys.modules.get("httpx"), sys.modules.get("httpx2"))
        if stack is not None
    )


def _stack(exc: BaseException) -> Any:
    """The module (httpx or httpx2) whose exception ``exc`` is."""
    root = type(exc).__module__.partition(".")[0]
    stack = sys.modules.get(root) if root in ("httpx", "httpx2") else None
    if stack is None:
        import httpx as stack  # e.g. a subclass defined elsewhere: httpx's names
    return stack


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def transport_failure(
    exc: Exception, *, host: str, phase: Literal["send", "read"]
) -> ProviderFailure:
    """The failure for an httpx exception raised while sending (up to the response
    headers) or while reading the body; raise it ``from exc``.

    Connection errors and timeouts while sending, and a connection broken while reading,
    are retryable (within the retry policy); a read timeout or an undecodable body is not.
    ``exc`` is httpx's or httpx2's (the same classes under the same names).
    """
    stack = _stack(exc)
    if phase == "send":
        if isinstance(exc, stack.TimeoutException):
            return ProviderFailure(
                f"timeout while connecting to {host}: {_describe(exc)}",
                retryable=True,
                kind="timeout",
            )
        if isinstance(exc, stack.TransportError):
            return ProviderFailure(
                f"connection to {host} failed: {_describe(exc)}", retryable=True, kind="connection"
            )
    else:
        if isinstance(exc, stack.TimeoutException):
            return ProviderFailure(
                f"timeout while reading the response: {_describe(exc)}", kind="timeout"
            )
        if isinstance(exc, stack.DecodingError):  # e.g. a body that is not the gzip it claims
            return ProviderFailure(f"invalid response body: {_describe(exc)}", kind="protocol")
        if isinstance(exc, stack.TransportError):
            return ProviderFailure(
                "connection closed by the server before the response was complete: "
                + _describe(exc),
                retryable=True,
                kind="connection",
            )
    return ProviderFailure(f"HTTP request to {host} failed: {_describe(exc)}", kind="connection")


# --- sending without leaking -------------------------------------------------

_WRITING_EVENTS = frozenset(
    {
        "connection.connect_tcp.started",  # the request owns its connection from here on
        "connection.connect_unix_socket.started",
        "http11.send_request_headers.started",
        "http2.send_request_headers.started",
    }
)


async def send_guarded(client: HttpClient, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)`` that cannot strand a pooled connection.

    See the module docstring: the send is shielded from cancellation until the request is
    being written on a connection (then httpcore's own cleanup is sound). With a client
    whose transport never reports that (a custom transport), the whole send stays
    shielded, bounded by the client's own timeouts. The caller's timeouts therefore belong
    *outside* this call. On cancellation: a response that arrived while the shield held the
    cancellation back is closed, then ``Cancelled`` propagates.
    """
    guard = trio.CancelScope(shield=True)

    async def trace(name: str, info: Mapping[str, Any]) -> None:
        if name in _WRITING_EVENTS:
            guard.shield = False

    request.extensions = {**request.extensions, "trace": trace}
    try:
        with guard:
            response: httpx.Response = await client.send(request, stream=True)
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
    with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_GRACE):
        await response.aclose()


# --- one attempt -------------------------------------------------------------


@attrs.define(eq=False)
class Exchange:
    """One admitted request and its open response (an event stream).

    :meth:`aclose` closes the response and gives the admission slot back; it must be
    called exactly once, also on failure and cancellation (it is shielded and bounded).
    """

    response: httpx.Response
    _admission: trio.Semaphore | None = attrs.field(default=None, alias="admission", repr=False)

    async def aclose(self) -> None:
        """Close the response and release the admission slot; safe when cancelled."""
        admission, self._admission = self._admission, None
        try:
            await aclose_response(self.response)
        finally:
            if admission is not None:
                admission.release()


async def open_exchange(
    client: HttpClient,
    request: httpx.Request,
    policy: RequestPolicy,
    deadline: float,
    media_type: str = _EVENT_STREAM,
) -> Exchange:
    """Send ``request`` and return its response once it is known to be an event stream
    (``media_type``: Server-Sent Events unless the wire API frames events otherwise).

    Waits for admission (until ``deadline``), sends with :func:`send_guarded` under the
    first-byte deadline, and checks the status and the content type (a missing content
    type is accepted, as some servers send none).

    Raises:
        ProviderFailure: a timeout, a transport failure, an error status (with the
            provider's own text and Retry-After), or a response that is not an event
            stream. Whatever was acquired is released first.
    """
    host = request.url.host
    admission = _admission_for(client)
    if admission is not None:
        admitted = False
        with trio.move_on_at(deadline):
            await admission.acquire()
            admitted = True
        if not admitted:
            raise overall_timeout(policy)
    try:
        first_byte = policy.first_byte_timeout
        now = trio.current_time()
        limit = deadline if first_byte is None else min(deadline, now + first_byte)
        response: httpx.Response | None = None
        try:
            with trio.move_on_at(limit):
                response = await send_guarded(client, request)
        except http_errors() as exc:
            raise transport_failure(exc, host=host, phase="send") from exc
        if response is None:
            if limit == deadline:
                raise overall_timeout(policy)
            raise ProviderFailure(
                f"timeout: no response from the server within {first_byte:g} s",
                retryable=True,
                kind="timeout",
            )
        exchange = Exchange(response, admission=admission)
        admission = None  # the exchange gives it back
    finally:
        if admission is not None:
            admission.release()
    try:
        # the first media type (a repeated header arrives joined with ","), no parameters
        content_type = response.headers.get("content-type", "")
        media = content_type.partition(",")[0].partition(";")[0].strip().lower()
        code = response.status_code  # a redirect, or 204 No Content, is no event stream either
        if not 200 <= code < 300 or code == 204 or (media and media != media_type):
            raise await _failure_from(response, media, deadline, media_type)
    except BaseException:
        await exchange.aclose()
        raise
    return exchange


def overall_timeout(policy: RequestPolicy) -> ProviderFailure:
    """The failure for a request that ran out of its overall ``timeout``."""
    return ProviderFailure(
        f"timeout: the request exceeded its overall timeout of {policy.timeout:g} s",
        kind="timeout",
    )


def _reason(response: httpx.Response) -> str:
    if response.reason_phrase:
        return response.reason_phrase
    try:
        return http.HTTPStatus(response.status_code).phrase
    except ValueError:
        return ""


async def _failure_from(
    response: httpx.Response, media: str, deadline: float, expected: str
) -> ProviderFailure:
    """The failure for an error status or a body that is not an event stream: the status,
    for a 2xx/3xx the content type, and the start of the body (the provider's own message
    when it is a JSON error)."""
    body = b""
    with trio.move_on_at(min(deadline, trio.current_time() + _ERROR_BODY_WAIT)):
        try:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= _ERROR_BODY_LIMIT:
                    break
        except http_errors():
            pass  # what arrived is all there is to show
    raw = body[:_ERROR_BODY_LIMIT].decode("utf-8", errors="replace")
    text = error_text(raw)
    own_code = error_code(raw)
    aws = _aws_error_type(response.headers.get("x-amzn-errortype", ""))
    if aws and own_code is None:
        own_code = aws
        text = f"{text} ({aws})" if text else aws
    code = response.status_code
    status = f"HTTP {code} {_reason(response)}".rstrip()
    if code < 400:
        # an HTML page (a proxy, a login portal, a wrong base_url): its first bytes say which
        status += f" is not an event stream (expected {expected}, got {media or 'no body type'})"
        text = shorten(text, _FIRST_BYTES)
        if text:
            text = f"the body begins: {text}"
    elif code == 404:
        url = safe_url(str(response.request.url))
        text = f"{text} (POST {url}: check the model's base_url and api)" if text else url
    return ProviderFailure(
        f"{status}: {text}" if text else status,
        retryable=code in RETRYABLE_STATUS,
        retry_after=parse_retry_after(response.headers),
        kind="protocol" if code < 400 else kind_of_status(code),
        status=code,
        code=own_code,
    )


def _aws_error_type(header: str) -> str | None:
    """The exception an AWS service (Bedrock, an API Gateway) names in ``x-amzn-errortype``
    (its body holds only the message): ``ValidationException`` of
    ``ValidationException:http://...`` or ``aws.protocols#ValidationException``; None for a
    value that is not such a name (the header is the server's: never shown as it is)."""
    name = header.partition(":")[0].rpartition("#")[2].strip()
    return name if _AWS_NAME.fullmatch(name) else None


_AWS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.]{0,99}")


def safe_url(url: str) -> str:
    """``url`` without its query string, fragment and credentials (which may hold a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
