"""The client side: a stream function that asks a proxy server instead of the provider.

``pt.stream_proxy(proxy_url, token)`` returns a :class:`ProxyStream`, which is a
``stream_fn`` (``async with stream(model, context, options) as events``). It sends what pi's
``streamProxy`` sends and rebuilds the partial and final assistant messages from the compact
events with the providers' :class:`MessageBuilder`, over the providers' public wire-stream
seam, :func:`pi_trio.providers.stream_wire` (shared client, leak-safe send, deadlines,
retries before the first event, bounded SSE, masked errors). Like a provider it never
raises for a failure: the stream ends with a ``StreamError`` whose message says what
happened. Failures of the proxy itself (its HTTP status and error text, a broken
connection) start with ``"Proxy error: "``; an upstream failure arrives as the server's
``error`` event and keeps the upstream's own text. The token is never shown.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, aclosing

import attrs
import trio

from .._errors import WireFormatError
from .._headers import header_secrets
from ..events import StreamEvent
from ..messages import Context, TextContent, ThinkingContent, ToolCall
from ..models import Model
from ..providers import (
    HttpClient,
    MessageBuilder,
    ProviderFailure,
    SSEEvent,
    StreamOptions,
    WireRequest,
    parse_event_json,
    redact,
    stream_wire,
    text_piece,
    token_count,
)
from ..wire import from_json
from ._protocol import (
    PROXY_EVENT_TYPES,
    ProxyDone,
    ProxyError,
    ProxyEvent,
    ProxyStart,
    ProxyTextEnd,
    ProxyTextStart,
    ProxyThinkingEnd,
    ProxyThinkingStart,
    ProxyToolCallEnd,
    ProxyToolCallStart,
    request_body,
)

__all__ = ["PROXY_ERROR_PREFIX", "ProxyStream", "stream_proxy"]

PROXY_ERROR_PREFIX = "Proxy error: "

_DELTA_KINDS: dict[str, type] = {
    "text_delta": TextContent,
    "thinking_delta": ThinkingContent,
    "toolcall_delta": ToolCall,
}


@attrs.frozen
class ProxyStream:
    """A stream function that goes through a pi proxy server at ``proxy_url``.

    ``token`` is the server's bearer token; with ``token=None`` each request's
    ``options.api_key`` is used instead, so an agent's ``get_api_key`` hook can hand out
    short-lived tokens. ``http_client`` (else ``options.http_client``, else the shared
    default client) carries the request. ``options`` timeouts and retries apply to the
    connection to the proxy; the serialisable options (temperature, max_tokens, reasoning,
    ...) travel to the server, which applies them upstream.
    """

    proxy_url: str
    token: str | None = attrs.field(default=None, repr=False)
    http_client: HttpClient | None = attrs.field(default=None, repr=False, eq=False)

    @property
    def endpoint(self) -> str:
        return f"{self.proxy_url.rstrip('/')}/api/stream"

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Stream one model call through the proxy: ``async with stream(...) as events``.

        Never raises for a failure (see the module docstring); on cancellation nothing more
        is emitted and the response is closed.
        """
        options = options or StreamOptions()
        builder = MessageBuilder(model)
        token = (self.token if self.token is not None else options.api_key or "").strip()
        if not token:
            message = f"{PROXY_ERROR_PREFIX}no token for the proxy at {self.endpoint}"
            return aclosing(_one(builder.error(message)))
        try:
            body = request_body(model, context, options)
        except Exception as exc:  # e.g. a custom message the converter cannot write
            message = f"{PROXY_ERROR_PREFIX}cannot encode the request: {exc}"
            return aclosing(_one(builder.error(redact(message, (token, options.api_key)))))
        headers = {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        if self.http_client is not None:
            options = attrs.evolve(options, http_client=self.http_client)
        secrets: tuple[str | None, ...] = (token, self.token, options.api_key)
        secrets += header_secrets(model.headers) + header_secrets(options.headers)
        decoder = ProxyDecoder(builder, secrets=secrets)
        request = WireRequest(self.endpoint, headers, body)
        # failures of the proxy itself (HTTP status, transport, a broken stream) get the
        # prefix; an upstream failure is the decoder's own StreamError and keeps its text
        return aclosing(
            stream_wire(
                builder,
                request,
                decoder,
                options,
                secrets,
                emit_start=False,
                error_prefix=PROXY_ERROR_PREFIX,
            )
        )


async def _one(event: StreamEvent) -> AsyncGenerator[StreamEvent, None]:
    """A stream of one (error) event."""
    await trio.lowlevel.checkpoint()
    yield event


def stream_proxy(
    proxy_url: str, token: str | None = None, *, http_client: HttpClient | None = None
) -> ProxyStream:
    """A ``stream_fn`` that streams every model call through the pi proxy at ``proxy_url``.

    ``agent = pt.Agent(stream_fn=pt.stream_proxy("https://llm.example.com", token))``.
    See :class:`ProxyStream`.
    """
    return ProxyStream(proxy_url, token, http_client)


_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


class ProxyDecoder:
    """Compact proxy events -> stream events, rebuilding the message with ``builder``.

    The server's content indexes are mapped onto the builder's (they normally agree).
    Tool-call arguments are re-parsed as each delta arrives, as pi's client does. Events of
    an unknown ``type`` are ignored (a newer server may send more); a malformed event or an
    index that names the wrong kind of block ends the stream with an error.
    """

    def __init__(self, builder: MessageBuilder, secrets: Iterable[str | None] = ()) -> None:
        self.builder = builder
        self.finished = False
        self._secrets = tuple(secrets)
        self._blocks: dict[int, int] = {}

    def feed(self, sse: SSEEvent) -> Iterable[StreamEvent]:
        if self.finished:
            return ()
        data = parse_event_json(sse)
        kind = data.get("type") if isinstance(data, dict) else None
        # fast path: the deltas are nearly every event
        expected = _DELTA_KINDS.get(kind) if isinstance(kind, str) else None
        if expected is not None:
            index = data.get("contentIndex")
            delta = data.get("delta")
            if isinstance(index, int) and isinstance(delta, str):
                return (self._delta(kind, self._block(kind, index, expected), delta),)  # type: ignore[arg-type]
        elif kind not in PROXY_EVENT_TYPES:
            if isinstance(kind, str):
                return ()
            raise ProviderFailure(f"invalid event from the proxy: no event type in {sse.data!r}")
        if kind in ("done", "error") and isinstance(data.get("usage"), dict):
            usage = data["usage"]  # counts a server got wrong never cost the answer
            for key in _COUNTS:
                if key in usage:
                    usage[key] = token_count(usage, key)
        try:
            event: ProxyEvent = from_json(data, ProxyEvent)
        except WireFormatError as exc:
            raise ProviderFailure(f"invalid {kind} event from the proxy: {exc}") from None
        return self._apply(event)

    def _block(self, kind: str, index: int, expected: type) -> int:
        position = self._blocks.get(index)
        if position is None or not isinstance(self.builder.message.content[position], expected):
            raise ProviderFailure(
                f"the proxy sent {kind} for content index {index}, "
                f"which is not an open {expected.__name__} block"
            )
        return position

    def _delta(self, kind: str, position: int, delta: str) -> StreamEvent:
        if kind == "text_delta":
            return self.builder.text_delta(position, text_piece(delta, "a text delta"))
        if kind == "thinking_delta":
            return self.builder.thinking_delta(position, text_piece(delta, "a thinking delta"))
        return self.builder.tool_call_delta(position, delta, parse_partial=True)

    def _apply(self, event: ProxyEvent) -> Iterable[StreamEvent]:
        builder = self.builder
        if isinstance(event, ProxyStart):
            return (builder.start(),)
        if isinstance(event, ProxyTextStart | ProxyThinkingStart | ProxyToolCallStart):
            if isinstance(event, ProxyTextStart):
                started: StreamEvent = builder.text_start()
            elif isinstance(event, ProxyThinkingStart):
                started = builder.thinking_start()
            else:
                started = builder.tool_call_start(event.id, event.tool_name)
            self._blocks[event.content_index] = len(builder.message.content) - 1
            return (started,)
        if isinstance(event, ProxyTextEnd):
            position = self._block(event.type, event.content_index, TextContent)
            return (builder.text_end(position, event.content_signature),)
        if isinstance(event, ProxyThinkingEnd):
            position = self._block(event.type, event.content_index, ThinkingContent)
            return (builder.thinking_end(position, event.content_signature, event.redacted),)
        if isinstance(event, ProxyToolCallEnd):
            position = self._block(event.type, event.content_index, ToolCall)
            ended = builder.tool_call_end(position)
            if event.thought_signature is not None:
                ended.tool_call.thought_signature = event.thought_signature
            return (ended,)
        if isinstance(event, ProxyDone):
            self.finished = True
            builder.message.usage = event.usage
            return (builder.done(event.reason),)
        if isinstance(event, ProxyError):
            self.finished = True
            builder.message.usage = event.usage
            text = redact(event.error_message or "", self._secrets)
            return (builder.error(text, event.reason),)
        # the _DELTA_KINDS fast path rejected these: a bad index or block kind
        position = self._block(event.type, event.content_index, _DELTA_KINDS[event.type])
        return (self._delta(event.type, position, event.delta),)

    def finish(self) -> Iterable[StreamEvent]:
        if not self.finished:
            raise ProviderFailure("the proxy closed the stream before its done or error event")
        return ()
