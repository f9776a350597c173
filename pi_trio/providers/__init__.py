"""Streaming LLM providers: one module per wire API, behind ``stream_simple``.

``pi_trio.providers.faux`` is the scripted model. Real wire APIs are listed in
``_registry.BUILTIN_APIS`` and imported on first use.
"""

from __future__ import annotations

from . import faux
from ._builder import ABORTED_MESSAGE, MessageBuilder
from ._options import CacheRetention, StreamFn, StreamOptions, ThinkingBudgets
from ._registry import (
    ApiStreamFunction,
    get_api,
    register_api,
    registered_apis,
    unregister_api,
)
from ._simple import complete_simple, stream_simple

__all__ = [
    "ABORTED_MESSAGE",
    "ApiStreamFunction",
    "CacheRetention",
    "MessageBuilder",
    "StreamFn",
    "StreamOptions",
    "ThinkingBudgets",
    "complete_simple",
    "faux",
    "get_api",
    "register_api",
    "registered_apis",
    "stream_simple",
    "unregister_api",
]
