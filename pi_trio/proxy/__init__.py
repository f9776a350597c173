"""Proxy streaming: pi's ``streamProxy`` protocol, its client and a Trio server.

An application whose agents must not hold provider keys (a browser, an untrusted client, a
shared key pool) streams its model calls through a server that does::

    # the server, holding OPENAI_API_KEY etc. in its environment
    async with trio.open_nursery() as nursery:
        url = await nursery.start(pt.proxy.ProxyServer(token=TOKEN).serve)

    # the client
    agent = pt.Agent(stream_fn=pt.stream_proxy(url, TOKEN), ...)

The wire protocol is pi-agent-core 0.73.1's, so pi's own ``streamProxy`` works against this
server and this client against pi's servers. See docs/proxy.md.
"""

from __future__ import annotations

from ._client import PROXY_ERROR_PREFIX, ProxyStream, stream_proxy
from ._protocol import (
    PROXY_EVENT_TYPES,
    ProxyDone,
    ProxyError,
    ProxyEvent,
    ProxyOptions,
    ProxyRequest,
    ProxyStart,
    ProxyTextDelta,
    ProxyTextEnd,
    ProxyTextStart,
    ProxyThinkingDelta,
    ProxyThinkingEnd,
    ProxyThinkingStart,
    ProxyToolCallDelta,
    ProxyToolCallEnd,
    ProxyToolCallStart,
    encode_event,
    request_body,
)
from ._server import TOKEN_ENV_VAR, ProxyServer, run_proxy_server, serve_proxy

__all__ = [
    "PROXY_ERROR_PREFIX",
    "PROXY_EVENT_TYPES",
    "TOKEN_ENV_VAR",
    "ProxyDone",
    "ProxyError",
    "ProxyEvent",
    "ProxyOptions",
    "ProxyRequest",
    "ProxyServer",
    "ProxyStart",
    "ProxyStream",
    "ProxyTextDelta",
    "ProxyTextEnd",
    "ProxyTextStart",
    "ProxyThinkingDelta",
    "ProxyThinkingEnd",
    "ProxyThinkingStart",
    "ProxyToolCallDelta",
    "ProxyToolCallEnd",
    "ProxyToolCallStart",
    "encode_event",
    "request_body",
    "run_proxy_server",
    "serve_proxy",
    "stream_proxy",
]
