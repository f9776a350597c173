"""The events of one streamed response, with the idle watchdog and the overall deadline.

:class:`SSEReader` reads the body of an open response (:class:`._http.Exchange`) chunk by
chunk into the pure :class:`._sse.SSEParser`. Each read is one await inside one cancel
scope whose deadline is the earlier of the overall deadline and the idle deadline; the idle
deadline is re-armed when a *parsed event* is handed out, so keep-alive comments do not
reset it. The caller's async generator therefore never yields inside a scope of ours.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Protocol

import attrs
import trio

from ._failure import ProviderFailure
from ._http import CLOSE_GRACE, http_errors, overall_timeout, transport_failure
from ._retry import RequestPolicy
from ._sse import SSEEvent, SSELimitError, SSEParser

if TYPE_CHECKING:
    import httpx

__all__ = ["SSE_FRAMING", "EventParser", "Framing", "SSEReader"]


class EventParser(Protocol):
    """Body bytes in, parsed events out (:class:`._sse.SSEParser` is one).

    ``feed`` returns the events a chunk completed, ``close`` those left at the end of the
    body; either raises :class:`._sse.SSELimitError` for an event over the size limit, or
    :class:`ProviderFailure` for bytes that cannot be events of this framing.
    """

    def feed(self, chunk: bytes) -> list[SSEEvent]: ...

    def close(self) -> list[SSEEvent]: ...


@attrs.frozen
class Framing:
    """How a wire API's response body carries its events: the media type the response
    must declare and the parser (made with ``max_event_bytes``) that splits the body."""

    media_type: str
    parser: Callable[[int], EventParser]


SSE_FRAMING = Framing("text/event-stream", SSEParser)
"""Server-Sent Events: the framing of every wire API but Bedrock's."""


class SSEReader:
    """Parsed events from ``response``'s body; :meth:`next_event` until ``None``.

    Not a context manager on purpose: the wire stream is an async generator that must not
    yield inside ``async with`` blocks hiding cancel scopes, so it calls :meth:`aclose` in
    its ``finally``.

    Args:
        response: an open streamed response whose body is an event stream.
        policy: gives ``idle_timeout`` and ``max_event_bytes``.
        deadline: the request's overall deadline (``trio.current_time()`` clock).
        framing: how the body carries events (default: Server-Sent Events).
    """

    __slots__ = (
        "_chunks",
        "_deadline",
        "_finished",
        "_host",
        "_idle",
        "_parser",
        "_pending",
        "_policy",
    )

    def __init__(
        self,
        response: httpx.Response,
        policy: RequestPolicy,
        deadline: float,
        framing: Framing = SSE_FRAMING,
    ) -> None:
        self._chunks: AsyncIterator[bytes] = response.aiter_bytes()
        self._parser = framing.parser(policy.max_event_bytes)
        self._pending: deque[SSEEvent] = deque()
        self._deadline = deadline
        self._policy = policy
        self._idle = policy.idle_timeout
        self._host = response.request.url.host
        self._finished = False

    async def next_event(self) -> SSEEvent | None:
        """The next parsed event, or ``None`` at the end of the body.

        Raises:
            ProviderFailure: a timeout (idle or overall), a broken connection, an
                undecodable body, or a line or event over ``max_event_bytes``.

        On cancellation ``Cancelled`` propagates and the body is left unread (:meth:`aclose`
        and the exchange's ``aclose`` clean up).
        """
        pending = self._pending
        if not pending:
            idle_deadline = math.inf if self._idle is None else trio.current_time() + self._idle
            while not pending:
                if self._finished:
                    return None
                chunk = await self._read_chunk(min(self._deadline, idle_deadline))
                try:
                    if chunk is None:
                        self._finished = True
                        pending.extend(self._parser.close())
                    else:
                        pending.extend(self._parser.feed(chunk))
                except SSELimitError as exc:
                    raise ProviderFailure(
                        f"the server sent {exc}; not a usable event stream (raise "
                        "StreamOptions.max_event_bytes if such events are expected)",
                        kind="protocol",
                    ) from exc
        return pending.popleft()

    async def _read_chunk(self, limit: float) -> bytes | None:
        try:
            with trio.move_on_at(limit) as scope:
                return await self._chunks.__anext__()
        except StopAsyncIteration:
            return None
        except http_errors() as exc:
            raise transport_failure(exc, host=self._host, phase="read") from exc
        finally:
            if scope.cancelled_caught:
                self._finished = True  # the interrupted read left the body iterator unusable
        if limit == self._deadline:
            raise overall_timeout(self._policy)
        raise ProviderFailure(
            f"timeout: no event from the server for {self._idle:g} s (the stream went idle)",
            kind="timeout",
        )

    async def aclose(self) -> None:
        """Close the body iterator (shielded, bounded); the response is closed by its owner."""
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_GRACE):
                await aclose()
