"""The little HTTP/1.1 the proxy server needs, with h11 over a Trio stream.

One request per connection: every response says ``connection: close``, so there is no
keep-alive state to get wrong and an early error reply (401, 413) never has to be followed by
the rest of a request body. Before closing after such a reply the connection lingers: it reads
and discards what the client is still sending, for a bounded time, so that closing with unread
data (which makes the kernel send a reset) cannot destroy the reply on its way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import h11
import trio

__all__ = [
    "CONNECTION_ERRORS",
    "BodyTooLarge",
    "Exchange",
]

CONNECTION_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError)
"""What a vanished or confused client raises; the server just closes the connection."""

_RECEIVE_SIZE = 65536
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 64 * 1024 * 1024


class BodyTooLarge(Exception):
    """The request body is larger than allowed."""


class Exchange:
    """One request and its response on one connection."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.SERVER)
        self.request: h11.Request | None = None
        self.extra_headers: list[tuple[str, str]] = []
        self.status: int | None = None

    # --- reading ---------------------------------------------------------------------------

    async def _next_event(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.conn.receive_data(bytes(await self.stream.receive_some(_RECEIVE_SIZE)))

    async def read_head(self) -> h11.Request | None:
        """The request line and headers; ``None`` if the client closed without sending one."""
        event = await self._next_event()
        if isinstance(event, h11.Request):
            self.request = event
            return event
        return None

    def header(self, name: bytes) -> bytes | None:
        assert self.request is not None
        for key, value in self.request.headers:
            if key == name:
                return bytes(value)
        return None

    async def read_body(self, limit: int) -> bytes:
        """The whole body; :class:`BodyTooLarge` as soon as it exceeds ``limit`` bytes."""
        if self.conn.they_are_waiting_for_100_continue:  # curl, for bodies over 1 KiB
            await self._send(h11.InformationalResponse(status_code=100, headers=[]))
        body = bytearray()
        while True:
            event = await self._next_event()
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > limit:
                    raise BodyTooLarge
            elif isinstance(event, h11.EndOfMessage):
                return bytes(body)
            else:
                raise h11.RemoteProtocolError("connection closed inside the request body")

    @property
    def body_consumed(self) -> bool:
        return self.conn.their_state is not h11.SEND_BODY

    # --- writing ---------------------------------------------------------------------------

    async def _send(self, event: Any) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send_all(data)

    async def start_response(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        self.status = status
        all_headers = [*headers, *self.extra_headers, ("connection", "close")]
        await self._send(h11.Response(status_code=status, headers=all_headers))

    async def send_data(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def end_response(self) -> None:
        await self._send(h11.EndOfMessage())

    async def send_json(
        self, status: int, payload: Any, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        body = json.dumps(payload).encode()
        content = [("content-type", "application/json"), ("content-length", str(len(body)))]
        await self.start_response(status, [*content, *headers])
        await self.send_data(body)
        await self.end_response()

    async def send_error(
        self, status: int, message: str, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        """A JSON error reply, ``{"error": message}`` (the shape pi's client reads)."""
        await self.send_json(status, {"error": message}, headers)

    async def send_empty(self, status: int, headers: Sequence[tuple[str, str]] = ()) -> None:
        await self.start_response(status, [("content-length", "0"), *headers])
        await self.end_response()

    async def linger(self) -> None:
        """Read and drop what the client still sends (bounded), so our reply survives."""
        if self.body_consumed:
            return
        received = 0
        with trio.move_on_after(_LINGER_SECONDS):
            while received < _LINGER_BYTES:
                data = await self.stream.receive_some(_RECEIVE_SIZE)
                if not data:
                    return
                received += len(data)
