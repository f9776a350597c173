"""Options of one model request, and the shape of a stream function."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import attrs

from .._headers import headers_repr
from ..events import StreamEvent
from ..messages import Context
from ..models import Model, ThinkingLevel

if TYPE_CHECKING:
    pass

__all__ = [
    "CacheRetention",
    "StreamFn",
    "StreamOptions",
    "ThinkingBudgets",
    "ToolChoice",
    "forced_tool",
]

CacheRetention: TypeAlias = Literal["none", "short", "long"]

ToolChoice: TypeAlias = Literal["auto", "none", "required"] | Mapping[str, str]
"""Whether the model may, must not, or must call a tool; ``{"name": "x"}``: must call tool x."""


def _check_tool_choice(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None or value in ("auto", "none", "required"):
        return
    if isinstance(value, Mapping) and set(value) == {"name"} and isinstance(value["name"], str):
        return
    raise ValueError(
        f"tool_choice must be 'auto', 'none', 'required' or {{'name': <a tool's name>}}, "
        f"got {value!r}"
    )


def forced_tool(choice: ToolChoice) -> tuple[str, str | None]:
    """``choice`` as (word, tool name): ("auto" | "none" | "required", None), or
    ("required", name) for ``{"name": name}``."""
    if isinstance(choice, Mapping):
        return "required", choice["name"]
    return choice, None


@attrs.frozen
class ThinkingBudgets:
    """Token budgets per thinking level, for providers that take a budget."""

    minimal: int | None = None
    low: int | None = None
    medium: int | None = None
    high: int | None = None


class HttpClient(Protocol):
    """What the providers need of an HTTP client: an ``httpx.AsyncClient``, or an
    ``httpx2.AsyncClient`` (the ``mcp`` SDK and others moved to httpx2, so one process can
    keep one HTTP stack); the client's own pool, timeouts and proxies apply."""

    def build_request(
        self, method: str, url: str, *, headers: Any = ..., content: Any = ...
    ) -> Any:
        """The request to :meth:`send`."""
        ...

    async def send(self, request: Any, *, stream: bool = ...) -> Any:
        """Send it; with ``stream=True`` the body is read by the caller."""
        ...


@attrs.frozen
class StreamOptions:
    """Per-request options (pi-ai's ``SimpleStreamOptions``, in seconds rather than ms).

    ``api_key`` is never shown in ``repr`` and never serialised. ``http_client`` is an
    ``httpx.AsyncClient`` or an ``httpx2.AsyncClient``; without one the providers use one
    shared client per ``trio.run``, httpx2's when httpx2 is installed, else httpx's
    (``PI_TRIO_HTTP_STACK=httpx`` keeps httpx). ``timeout`` bounds the whole request
    including retries; ``first_byte_timeout`` the wait for the response headers and first
    bytes; ``idle_timeout`` the longest gap between two parsed events (keep-alive bytes do not
    count). ``max_retry_delay`` caps a single wait: a server asking for a longer Retry-After
    fails the request at once with an error that says so. ``max_event_bytes`` is the largest
    Server-Sent Events line or event accepted from the server (8 MiB by default): a longer one
    ends the stream with an error that says so, which keeps the memory one stream can take
    bounded by about this much whatever the server sends. ``tool_choice`` (pi-ai's
    ``toolChoice``): None leaves it to the API's default; "auto", "none", "required" or
    ``{"name": tool}`` are mapped to each wire API's own form (Anthropic's "any", Google's
    "ANY" with the allowed name).

    Raises:
        ValueError: a ``tool_choice`` that is none of those.
    """

    api_key: str | None = attrs.field(default=None, repr=False)
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: ThinkingLevel | None = None
    session_id: str | None = None
    thinking_budgets: ThinkingBudgets | None = None
    cache_retention: CacheRetention | None = None
    headers: Mapping[str, str] | None = attrs.field(default=None, repr=headers_repr)
    metadata: Mapping[str, Any] | None = None
    http_client: HttpClient | None = attrs.field(default=None, repr=False, eq=False)
    timeout: float | None = None
    first_byte_timeout: float | None = 60.0
    idle_timeout: float | None = 120.0
    max_retries: int = 2
    max_retry_delay: float = 60.0
    max_event_bytes: int = 8 * 1024 * 1024
    tool_choice: ToolChoice | None = attrs.field(default=None, validator=_check_tool_choice)


StreamFn: TypeAlias = Callable[
    [Model, Context, StreamOptions], AbstractAsyncContextManager[AsyncIterator[StreamEvent]]
]
"""``stream_fn(model, context, options)``: an async context manager that yields an async
iterator of stream events. The loop does ``async with stream_fn(...) as events:
async for event in events: ...``; leaving the block closes the stream (and its HTTP response)."""
