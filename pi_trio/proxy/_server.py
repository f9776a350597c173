"""The server side: ``POST /api/stream`` answered from the built-in providers, in Trio.

:class:`ProxyServer` holds the provider keys (its own environment, or ``get_api_key``) so
that its clients need only the proxy's bearer token. Per request it checks the token
(constant-time), limits the body size (413) and the time to send it, validates the body
through the wire format (400 naming the path of the problem; so is a body nested too deeply,
for the JSON parser or for the wire format's ``max_depth``), resolves the model on the
server's side (a client cannot point the server's keys at a host of its choosing), streams
the upstream answer as pi's compact events, and bounds the whole request in time.

While the events flow a second task watches the connection: when the client goes away the
upstream request is cancelled at once (and with it the provider's HTTP response), rather
than when the next write fails. A failed, slow or vanished client only ends its own
connection; the server keeps serving.
"""

from __future__ import annotations

import hmac
import inspect
import json
import math
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import attrs
import trio

from .._errors import PiError, ProviderNotFoundError, WireFormatError
from .._logging import proxy_logger
from ..events import StreamDone, StreamError
from ..models import Model, get_model
from ..providers import HttpClient, StreamFn, StreamOptions, stream_simple
from ..wire import from_json
from ._http11 import CONNECTION_ERRORS, BodyTooLarge, Exchange
from ._protocol import ProxyRequest, encode_event, error_event

__all__ = ["TOKEN_ENV_VAR", "ProxyServer", "run_proxy_server", "serve_proxy"]

TOKEN_ENV_VAR = "PI_TRIO_PROXY_TOKEN"
STREAM_PATH = "/api/stream"

GetApiKey = Callable[[str], "Awaitable[str | None] | str | None"]

_SSE_HEADERS = [
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),  # nginx: pass events through unbuffered
]
_TRAILER_SECONDS = 5.0  # for the last write after a time limit ran out


class _Reject(Exception):
    """A request refused before streaming: HTTP ``status`` with ``message``."""

    def __init__(self, status: int, message: str, headers: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def _check_token(token: str) -> str:
    if not token:
        raise PiError(f"the proxy needs a token: pass token= or set {TOKEN_ENV_VAR}")
    return token


@attrs.define(kw_only=True)
class ProxyServer:
    """pi's proxy endpoint. Start with ``url = await nursery.start(server.serve)``.

    ``token``: the bearer token clients must send. ``host``/``port``: where to listen
    (loopback by default; port 0 picks a free one, see :attr:`url` once started).
    ``stream_fn`` answers upstream (default ``pt.stream_simple``: the built-in providers,
    keys from this process's environment or ``get_api_key(provider)``). ``models`` are
    the models served, matched by provider and id; the server's descriptor is used, never
    the client's (default: the built-in registry). ``trust_client_models=True`` uses the
    model exactly as the client sent it (base URL and headers included): only for clients
    you would give the keys to anyway. ``max_body_bytes``: larger bodies get 413.
    ``header_timeout``: seconds to receive the whole request. ``request_timeout``: seconds
    for the whole streamed answer (``None``: no limit); when it runs out the client gets an
    ``error`` event. ``max_retries`` and ``max_retry_delay`` (a cap on what a client may
    ask for) govern the upstream request's retries. ``cors_origins``:
    browser origins allowed to call (``"*"`` for any); none by default.
    """

    token: str = attrs.field(repr=False, converter=_check_token)
    host: str = "127.0.0.1"
    port: int = 0
    stream_fn: StreamFn = stream_simple
    models: Iterable[Model] | None = None
    trust_client_models: bool = False
    get_api_key: GetApiKey | None = attrs.field(default=None, repr=False)
    http_client: HttpClient | None = attrs.field(default=None, repr=False)
    max_body_bytes: int = 16 * 1024 * 1024
    header_timeout: float = 30.0
    request_timeout: float | None = 600.0
    max_retry_delay: float = 60.0
    max_retries: int = 2
    cors_origins: Sequence[str] = ()
    _served: dict[tuple[str, str], Model] | None = attrs.field(init=False, default=None)
    _expected: bytes = attrs.field(init=False, repr=False, default=b"")
    bound_port: int | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._expected = self.token.encode()
        if self.models is not None:
            self._served = {(m.provider, m.id): m for m in self.models}

    @property
    def url(self) -> str:
        """``http://host:port`` once :meth:`serve` has started."""
        if self.bound_port is None:
            raise RuntimeError("the server has not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.bound_port}"

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and serve until cancelled; ``task_status.started(url)`` once listening."""
        listeners = await trio.open_tcp_listeners(self.port, host=self.host)
        self.bound_port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle_connection, listeners)
            proxy_logger.info("pi proxy listening on %s%s", self.url, STREAM_PATH)
            task_status.started(self.url)

    # --- one connection ------------------------------------------------------------------

    async def _handle_connection(self, stream: trio.abc.Stream) -> None:
        exchange = Exchange(stream)
        try:
            await self._exchange(exchange)
        except* CONNECTION_ERRORS:
            pass  # the client went away or spoke nonsense: nothing to answer
        except* Exception:
            proxy_logger.exception("pi proxy: request failed")
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await stream.aclose()

    async def _exchange(self, exchange: Exchange) -> None:
        with trio.move_on_after(self.header_timeout) as reading:
            head = await exchange.read_head()
            if head is None:
                return
            try:
                request = await self._read_request(exchange)
            except _Reject as reject:
                await self._reject(exchange, reject)
                return
        if reading.cancelled_caught:
            if exchange.request is not None and exchange.status is None:
                too_slow = _Reject(408, "request not received in time")
                await self._reject(exchange, too_slow, linger=False)
            return
        if request is None:  # a CORS preflight, answered
            return
        await self._answer(exchange, request)

    async def _reject(self, exchange: Exchange, reject: _Reject, *, linger: bool = True) -> None:
        if exchange.request is not None:
            target = exchange.request.target.decode(errors="replace")
            proxy_logger.info("pi proxy: %s -> %d %s", target, reject.status, reject.message)
        with trio.move_on_after(_TRAILER_SECONDS):
            await exchange.send_error(reject.status, reject.message, reject.headers)
            if linger:  # not for a client too slow to send its request at all
                await exchange.linger()

    async def _read_request(self, exchange: Exchange) -> ProxyRequest | None:
        head = exchange.request
        assert head is not None
        self._cors(exchange)
        path = head.target.split(b"?", 1)[0]
        if path != STREAM_PATH.encode():
            raise _Reject(404, f"not found; the proxy serves POST {STREAM_PATH}")
        if head.method == b"OPTIONS" and self.cors_origins:
            await exchange.send_empty(
                204,
                [
                    ("access-control-allow-methods", "POST, OPTIONS"),
                    ("access-control-allow-headers", "authorization, content-type"),
                    ("access-control-max-age", "600"),
                ],
            )
            await exchange.linger()
            return None
        if head.method != b"POST":
            raise _Reject(405, f"method not allowed; use POST {STREAM_PATH}", [("allow", "POST")])
        if not self._authorized(exchange.header(b"authorization")):
            raise _Reject(401, "missing or invalid bearer token", [("www-authenticate", "Bearer")])
        declared = exchange.header(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _Reject(413, f"request body larger than {self.max_body_bytes} bytes")
        try:
            raw = await exchange.read_body(self.max_body_bytes)
        except BodyTooLarge:
            raise _Reject(413, f"request body larger than {self.max_body_bytes} bytes") from None
        return self._parse(raw)

    def _cors(self, exchange: Exchange) -> None:
        origin = exchange.header(b"origin")
        if origin is None or not self.cors_origins:
            return
        text = origin.decode("latin-1")
        if "*" in self.cors_origins or text in self.cors_origins:
            exchange.extra_headers += [("access-control-allow-origin", text), ("vary", "origin")]

    def _authorized(self, value: bytes | None) -> bool:
        scheme, _, credential = (value or b"").partition(b" ")
        # compare_digest takes as long for a wrong token as for a right one of that length
        matches = hmac.compare_digest(credential.strip(), self._expected)
        return scheme.lower() == b"bearer" and matches

    def _parse(self, raw: bytes) -> ProxyRequest:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise _Reject(400, f"invalid JSON body: {exc}") from None
        except RecursionError:  # the parser's own stack limit, some hundreds of levels
            raise _Reject(400, "invalid JSON body: nested too deeply to parse") from None
        if not isinstance(data, dict):
            raise _Reject(400, "invalid request body: (root): expected an object")
        try:
            request: ProxyRequest = from_json(data, ProxyRequest)
        except WireFormatError as exc:
            raise _Reject(400, f"invalid request body: {exc}") from None
        return request

    def _resolve(self, requested: Model) -> Model:
        if self.trust_client_models:
            return requested
        if self._served is not None:
            found = self._served.get((requested.provider, requested.id))
            if found is None:
                served = ", ".join(f"{p}/{i}" for p, i in sorted(self._served))
                raise _Reject(
                    400,
                    f"model: {requested.provider}/{requested.id} is not served here; "
                    f"served: {served}",
                )
            return found
        try:
            return get_model(requested.provider, requested.id)
        except ProviderNotFoundError as exc:
            raise _Reject(400, f"model: {exc}") from None

    async def _options(self, model: Model, request: ProxyRequest) -> StreamOptions:
        asked = request.options
        api_key = None
        if self.get_api_key is not None:
            key = self.get_api_key(model.provider)
            api_key = await key if inspect.isawaitable(key) else key
        retry_delay = self.max_retry_delay
        if asked.max_retry_delay_ms is not None:
            retry_delay = max(0.0, min(retry_delay, asked.max_retry_delay_ms / 1000))
        return StreamOptions(
            api_key=api_key,
            temperature=asked.temperature,
            max_tokens=asked.max_tokens,
            reasoning=asked.reasoning,
            thinking_budgets=asked.thinking_budgets,
            session_id=asked.session_id,
            cache_retention=asked.cache_retention,
            headers=asked.headers,
            metadata=asked.metadata,
            http_client=self.http_client,
            max_retries=self.max_retries,
            max_retry_delay=retry_delay,
        )

    # --- streaming the answer --------------------------------------------------------------

    async def _answer(self, exchange: Exchange, request: ProxyRequest) -> None:
        limit = self.request_timeout
        deadline = math.inf if limit is None else trio.current_time() + limit
        try:
            model = self._resolve(request.model)
            options = await self._options(model, request)
            upstream = self.stream_fn(model, request.context, options)
        except _Reject as reject:
            await self._reject(exchange, reject)
            return
        except ProviderNotFoundError as exc:
            await self._reject(exchange, _Reject(400, f"model.api: {exc}"))
            return
        except Exception as exc:  # get_api_key or stream_fn failed before streaming
            proxy_logger.exception("pi proxy: could not start the upstream request")
            await self._reject(
                exchange, _Reject(500, f"upstream setup failed: {type(exc).__name__}")
            )
            return
        proxy_logger.info("pi proxy: streaming %s/%s", model.provider, model.id)
        await exchange.start_response(200, _SSE_HEADERS)
        hung_up = False
        ended = False
        partial = None
        failure: str | None = None

        async def watch_hangup(scope: trio.CancelScope) -> None:
            nonlocal hung_up
            while True:  # bytes after the request are ignored; EOF or reset means gone
                try:
                    data = await exchange.stream.receive_some(4096)
                except CONNECTION_ERRORS:
                    data = b""
                if not data:
                    hung_up = True
                    scope.cancel()
                    return

        with trio.move_on_at(deadline):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_hangup, nursery.cancel_scope)
                try:
                    async with upstream as events:
                        async for event in events:
                            if not isinstance(event, StreamDone | StreamError):
                                partial = getattr(event, "partial", None)
                            await self._send_event(exchange, encode_event(event))
                            if isinstance(event, StreamDone | StreamError):
                                ended = True
                                break
                except CONNECTION_ERRORS:
                    raise
                except Exception as exc:  # a stream_fn that raised instead of ending in error
                    failure = f"{type(exc).__name__}: {exc}"
                nursery.cancel_scope.cancel()
        if hung_up:
            proxy_logger.info("pi proxy: client disconnected; upstream request cancelled")
            return
        if not ended:
            if failure is None and math.isfinite(deadline) and trio.current_time() >= deadline:
                failure = f"the proxy's time limit of {limit:g} s ran out"
            elif failure is None:
                failure = "the upstream stream ended without a done or error event"
            usage = getattr(partial, "usage", None)
            with trio.move_on_after(_TRAILER_SECONDS):
                await self._send_event(exchange, error_event("error", failure, usage))
                await exchange.end_response()
            return
        await exchange.end_response()

    async def _send_event(self, exchange: Exchange, payload: dict[str, Any]) -> None:
        line = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        await exchange.send_data(f"data: {line}\n\n".encode())


async def serve_proxy(
    token: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    **settings: Any,
) -> None:
    """Run a :class:`ProxyServer` until cancelled: ``url = await nursery.start(serve_proxy,
    token)``. ``settings`` are the other :class:`ProxyServer` fields."""
    server = ProxyServer(token=token, host=host, port=port, **settings)
    await server.serve(task_status=task_status)


def run_proxy_server(
    host: str = "127.0.0.1",
    port: int = 8787,
    token: str | None = None,
    *,
    on_ready: Callable[[str], None] | None = None,
    **settings: Any,
) -> None:
    """Serve the proxy in a new ``trio.run`` until interrupted (for ``pi-trio proxy``).

    ``token`` defaults to the ``PI_TRIO_PROXY_TOKEN`` environment variable; without either
    this raises :class:`pt.PiError`. ``on_ready(url)`` is called once the port is open.
    Provider keys come from this process's environment (``OPENAI_API_KEY``, ...).
    """
    token = token or os.environ.get(TOKEN_ENV_VAR, "")
    server = ProxyServer(token=token, host=host, port=port, **settings)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve)
            if on_ready is not None:
                on_ready(url)

    trio.run(main)
