"""The explicit map from a model's wire ``api`` to the function that speaks it.

Nothing registers itself on import: the built-in entries are listed in :data:`BUILTIN_APIS`
(module and function, imported on first use so that ``import pi_trio`` stays light), and
applications add their own with :func:`register_api`. An entry is an async generator function
``(model, context, options) -> AsyncGenerator[StreamEvent]`` that never raises for a provider
failure (it ends with a :class:`pt.StreamError`) and lets ``trio.Cancelled`` out untouched.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TypeAlias, cast

from .._errors import ProviderNotFoundError
from ..events import StreamEvent
from ..messages import Context
from ..models import Model
from ._options import StreamOptions

__all__ = [
    "BUILTIN_APIS",
    "ApiStreamFunction",
    "get_api",
    "register_api",
    "registered_apis",
    "unregister_api",
]

ApiStreamFunction: TypeAlias = Callable[
    [Model, Context, StreamOptions], AsyncGenerator[StreamEvent, None]
]

BUILTIN_APIS: Mapping[str, tuple[str, str]] = {
    "faux": ("pi_trio.providers.faux", "stream_unscripted"),
    "openai-completions": ("pi_trio.providers.openai_completions", "stream_openai_completions"),
    "openai-responses": ("pi_trio.providers.openai_responses", "stream_openai_responses"),
    "anthropic-messages": ("pi_trio.providers.anthropic", "stream_anthropic"),
    "google-generative-ai": ("pi_trio.providers.google", "stream_google"),
    "google-vertex": ("pi_trio.providers.google_vertex", "stream_google_vertex"),
    "bedrock-converse-stream": ("pi_trio.providers.bedrock", "stream_bedrock"),
    "azure-openai-responses": (
        "pi_trio.providers.azure_openai_responses",
        "stream_azure_openai_responses",
    ),
    "mistral-conversations": ("pi_trio.providers.mistral", "stream_mistral"),
}

_registered: dict[str, ApiStreamFunction] = {}
_loaded: dict[str, ApiStreamFunction] = {}


def register_api(api: str, stream: ApiStreamFunction) -> None:
    """Make ``stream`` the function for models whose ``api`` is ``api`` (replacing any)."""
    _registered[api] = stream


def unregister_api(api: str) -> None:
    """Remove an entry added with :func:`register_api` (a built-in comes back)."""
    _registered.pop(api, None)


def get_api(api: str) -> ApiStreamFunction:
    """The stream function for ``api``; :class:`pt.ProviderNotFoundError` if there is none."""
    found = _registered.get(api) or _loaded.get(api)
    if found is not None:
        return found
    location = BUILTIN_APIS.get(api)
    if location is None:
        raise ProviderNotFoundError(
            f"no provider for api {api!r}; known: {', '.join(registered_apis())}"
        )
    module, name = location
    found = cast(ApiStreamFunction, getattr(importlib.import_module(module), name))
    _loaded[api] = found
    return found


def registered_apis() -> list[str]:
    return sorted(set(BUILTIN_APIS) | set(_registered))
