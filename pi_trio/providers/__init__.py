"""Streaming LLM providers: one module per wire API, behind ``stream_simple``.

``pi_trio.providers.faux`` is the scripted model. Real wire APIs are listed in
``_registry.BUILTIN_APIS`` and imported on first use.

The wire-stream seam, for code that speaks another SSE protocol over the same HTTP path (the
proxy client does): :func:`stream_wire` drives one request (shared client, leak-safe send,
deadlines, retries before the first event, bounded SSE, masked errors) and hands each parsed
:class:`SSEEvent` to a :class:`Decoder`, which builds the message with a
:class:`MessageBuilder` and raises :class:`ProviderFailure` for an error in the stream.
:func:`parse_event_json` reads an event's JSON, :func:`redact` masks secrets in any encoding,
and :func:`pool_in_use` tells whether a client's pool got every connection back.
"""

from __future__ import annotations

from . import faux
from ._builder import ABORTED_MESSAGE, MessageBuilder
from ._failure import ProviderFailure, redact, text_piece
from ._http import pool_in_use
from ._options import CacheRetention, HttpClient, StreamFn, StreamOptions, ThinkingBudgets
from ._registry import (
    ApiStreamFunction,
    get_api,
    register_api,
    registered_apis,
    unregister_api,
)
from ._simple import complete_simple, stream_simple
from ._sse import SSEEvent
from ._stream import Decoder, WireApi, WireRequest, parse_event_json, stream_wire
from ._usage import token_count

__all__ = [
    "ABORTED_MESSAGE",
    "ApiStreamFunction",
    "CacheRetention",
    "Decoder",
    "HttpClient",
    "MessageBuilder",
    "ProviderFailure",
    "SSEEvent",
    "StreamFn",
    "StreamOptions",
    "ThinkingBudgets",
    "WireApi",
    "WireRequest",
    "complete_simple",
    "faux",
    "get_api",
    "parse_event_json",
    "pool_in_use",
    "redact",
    "register_api",
    "registered_apis",
    "stream_simple",
    "stream_wire",
    "text_piece",
    "token_count",
    "unregister_api",
]
