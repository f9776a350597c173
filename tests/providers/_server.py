"""A scripted HTTP/1.1 server for provider tests, on 127.0.0.1 inside the test's nursery.

Built on ``trio.serve_listeners`` and h11 (already installed through httpcore),
nothing else. Each path has a queue of replies; a request takes the next one
(the last reply repeats). Replies cover the recorded-style SSE bodies and the
faults the providers must survive: disconnect mid-stream, malformed events,
error statuses with Retry-After, a stall after the headers, a server that never
answers, and a slow drip of keep-alive bytes. A stalled or unanswered connection stays open
until the client closes it, which is counted (:meth:`ScriptedServer.wait_for_hangups`): that
is how a test sees a cancelled request reach the server.

Every request is recorded (path, headers, parsed JSON body) for assertions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import h11
import trio


@attrs.define
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@attrs.define
class SSE:
    """A 200 event-stream body sent as ``chunks``.

    ``then``: "end" finishes the body properly; "disconnect" drops the
    connection without finishing it; "stall" keeps it open and silent.
    ``interval`` is a pause before each chunk (slow drip).
    """

    chunks: Sequence[str | bytes]
    then: str = "end"
    interval: float = 0.0
    status: int = 200
    headers: Sequence[tuple[str, str]] = ()


@attrs.define
class Status:
    """A complete non-streaming reply, e.g. an error with a JSON body.

    ``body`` is sent as JSON, or as it is when it is ``bytes`` (then ``content_type``
    says what it is: an HTML page, say)."""

    status: int
    body: Any = None
    headers: Sequence[tuple[str, str]] = ()
    content_type: str = "application/json"


@attrs.define
class NeverAnswer:
    """Read the request and never send anything."""


@attrs.define
class Gate:
    """Wait for ``event`` before replying with ``reply`` (lets tests order things)."""

    event: trio.Event
    reply: SSE | Status


Reply = SSE | Status | NeverAnswer | Gate


def sse_events(*events: Any, done: str | None = None) -> list[str]:
    """Chunks for a body of ``data:`` events; a ``(name, payload)`` tuple adds ``event:``."""
    chunks = []
    for event in events:
        if isinstance(event, tuple):
            name, payload = event
            chunks.append(f"event: {name}\ndata: {json.dumps(payload)}\n\n")
        else:
            chunks.append(f"data: {json.dumps(event)}\n\n")
    if done is not None:
        chunks.append(f"data: {done}\n\n")
    return chunks


class ScriptedServer:
    """Start with ``await nursery.start(server.serve)``; ``server.url`` is its base URL."""

    def __init__(self) -> None:
        self.port = 0
        self.requests: list[Recorded] = []
        self.connections = 0
        self.hangups = 0
        self._hangup = trio.Event()
        self._routes: dict[str, list[Reply]] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, path: str, *replies: Reply) -> None:
        self._routes[path] = list(replies)

    def _next(self, path: str) -> Reply:
        queue = self._routes.get(path)
        if not queue:
            return Status(404, {"error": {"message": f"no script for {path}"}})
        return queue.pop(0) if len(queue) > 1 else queue[0]

    async def wait_for_hangups(self, count: int = 1) -> None:
        """Wait until clients have closed ``count`` stalled or unanswered connections."""
        while self.hangups < count:
            await self._hangup.wait()

    async def _until_hangup(self, stream: trio.SocketStream) -> None:
        """Keep a connection open and silent until the client closes it, and count that."""
        try:
            while await stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        self.hangups += 1
        self._hangup.set()
        self._hangup = trio.Event()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started()

    async def _handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read_request(stream, conn)
                if request is None:
                    return
                keep_going = await self._reply(stream, conn, self._next(request.path))
                if not keep_going or conn.our_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _read_request(
        self, stream: trio.SocketStream, conn: h11.Connection
    ) -> Recorded | None:
        head: h11.Request | None = None
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data and head is None:
                    return None
                continue
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                recorded = Recorded(
                    method=head.method.decode(),
                    path=head.target.decode(),
                    headers={k.decode().lower(): v.decode() for k, v in head.headers},
                    body=body,
                )
                self.requests.append(recorded)
                return recorded
            else:
                return None

    async def _send(self, stream: trio.SocketStream, conn: h11.Connection, event: Any) -> None:
        data = conn.send(event)
        if data:
            await stream.send_all(data)

    async def _reply(self, stream: trio.SocketStream, conn: h11.Connection, reply: Reply) -> bool:
        if isinstance(reply, Gate):
            await reply.event.wait()
            reply = reply.reply
        if isinstance(reply, NeverAnswer):
            await self._until_hangup(stream)
            return False
        if isinstance(reply, Status):
            if isinstance(reply.body, bytes):
                payload = reply.body
            else:
                payload = b"" if reply.body is None else json.dumps(reply.body).encode()
            headers = [("content-type", reply.content_type), ("content-length", str(len(payload)))]
            headers += list(reply.headers)
            await self._send(stream, conn, h11.Response(status_code=reply.status, headers=headers))
            await self._send(stream, conn, h11.Data(data=payload))
            await self._send(stream, conn, h11.EndOfMessage())
            return True
        assert isinstance(reply, SSE)
        headers = [("cache-control", "no-cache"), *reply.headers]
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.insert(0, ("content-type", "text/event-stream"))
        await self._send(stream, conn, h11.Response(status_code=reply.status, headers=headers))
        for chunk in reply.chunks:
            if reply.interval:
                await trio.sleep(reply.interval)
            data = chunk.encode() if isinstance(chunk, str) else chunk
            await self._send(stream, conn, h11.Data(data=data))
        if reply.then == "disconnect":
            return False
        if reply.then == "stall":
            await self._until_hangup(stream)
            return False
        await self._send(stream, conn, h11.EndOfMessage())
        return True
