"""One live MCP client connection, held open by a task of the server's nursery.

The SDK's ``Client`` is an async context manager whose task groups must be entered and left in
the same task, while tool calls come from the loop's tool tasks. So a :class:`Connection` runs
in a task of its own (``run``): it enters the ``Client``, marks itself ready, and waits until it
is told to stop or its transport's read stream ends (a stdio child that exited, a torn-down
HTTP transport). Calls from any task then use ``connection.client``.

A connection is single-use: once ``ended`` is set, :class:`pi_trio.mcp.McpServer` opens a new
one for the next call (restarting a stdio child, re-initializing an HTTP session).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

import mcp_types as types
import trio
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._logging import mcp_logger

__all__ = ["CLOSE_TIMEOUT", "LISTEN_PAUSE_MAX", "Connection", "TransportFactory", "describe"]

LISTEN_PAUSE_MAX = 30.0
"""Seconds at most between attempts to listen again for tool changes after the stream dropped
(1 s at first, doubled each time in a row)."""
CLOSE_TIMEOUT = 10.0
"""Seconds a connection's close may take (the SDK bounds a stdio child's steps itself, well
within it); past it the close is cut short."""

TransportFactory = Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]


def describe(exc: BaseException) -> str:
    """A one-line account of a failure, looking inside exception groups (the SDK's task
    groups wrap transport errors such as httpx's ConnectError in them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"{exc.message} (MCP error {exc.code})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


class _WatchedReadStream:
    """The transport's read stream, passed through, calling ``on_end`` once it is exhausted."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._inner, name)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except Exception:  # end of stream, closed, broken: the connection is over
            self._on_end()
            raise
        return item

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.__anext__()
        except StopAsyncIteration:
            self._on_end()
            raise
        except Exception:
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc_val, exc_tb)
        return result


class _WatchedTransport:
    """A transport whose read stream reports its end (the SDK's ``Transport`` protocol)."""

    def __init__(
        self, inner: AbstractAsyncContextManager[tuple[Any, Any]], on_end: Callable[[], None]
    ) -> None:
        self._inner = inner
        self._on_end = on_end

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return _WatchedReadStream(read, self._on_end), write

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)


class Connection:
    """A connection's state: ``ready`` (``client`` usable) then ``ended`` (``failure`` says why
    when it ended on its own). ``settled`` is set at ready or at an end before ready."""

    def __init__(
        self,
        make_transport: TransportFactory,
        *,
        mode: str,
        connect_timeout: float,
        closed_text: str,
        on_tools_changed: Callable[[], None],
    ) -> None:
        self._closed_text = closed_text
        self._make_transport = make_transport
        self._mode = mode
        self._connect_timeout = connect_timeout
        self._on_tools_changed = on_tools_changed
        self._stop = trio.Event()
        self._scope: trio.CancelScope | None = None  # the connection's, from connect to close
        self.settled = trio.Event()
        self.ended = trio.Event()
        self.client: Client | None = None
        self.failure: str | None = None

    @property
    def stopping(self) -> bool:
        """Closing or closed: not to be used for new calls."""
        return self._stop.is_set()

    def _stream_ended(self) -> None:
        self.stop(self._closed_text)

    def stop(self, reason: str | None = None) -> None:
        """Ask the task to close the connection (sync, idempotent). ``reason`` is kept as
        ``failure`` when the connection broke rather than being closed on purpose."""
        if reason is not None and self.failure is None:
            self.failure = reason
        self._stop.set()
        if self._scope is not None and self.client is None:  # still connecting: give up now
            self._scope.cancel(reason="MCP connection closed while connecting")

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_tools_changed()
        elif isinstance(message, Exception):
            mcp_logger.debug("MCP transport reported %s", describe(message))
        await trio.lowlevel.checkpoint()

    async def _listen_for_changes(self, client: Client) -> None:
        """2026-era servers announce tools/list_changed only on a ``subscriptions/listen``
        stream the client opens; older ones send the notification (see ``_on_message``)."""
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return
        capability = client.server_capabilities.tools
        if capability is None or not capability.list_changed:
            return
        pause = 1.0
        while True:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    pause = 1.0
                    async for _event in subscription:
                        self._on_tools_changed()
                return  # the server ended it: it announces nothing more
            except SubscriptionLost as exc:  # dropped: listen again, and list again (the SDK's
                self._on_tools_changed()  # advice: a change may have gone by meanwhile)
                mcp_logger.debug(
                    "MCP tools/list_changed subscription lost (%s); listening again in %g s",
                    describe(exc), pause,
                )  # fmt: skip
            except (ListenNotSupportedError, MCPError, TimeoutError) as exc:
                mcp_logger.debug("MCP tools/list_changed subscription ended: %s", describe(exc))
                return
            await trio.sleep(pause)
            pause = min(pause * 2, LISTEN_PAUSE_MAX)

    async def run(self) -> None:
        """The connection's task: connect within ``connect_timeout``, serve until stopped.

        Never raises (a failure is kept in ``failure``); on cancellation the client and its
        transport are closed (the SDK closes a stdio child's stdin, then terminates it, each
        step bounded) and ``Cancelled`` propagates.
        """
        transport = _WatchedTransport(self._make_transport(), self._stream_ended)
        deadline = trio.current_time() + self._connect_timeout
        try:
            with trio.CancelScope(deadline=deadline) as scope:
                self._scope = scope
                if self._stop.is_set():  # closed before it began
                    scope.cancel(reason="MCP connection closed while connecting")
                client = Client(transport, mode=self._mode, message_handler=self._on_message,
                                cache=None)  # fmt: skip
                async with client:
                    scope.deadline = math.inf
                    self.client = client
                    self.settled.set()
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._listen_for_changes, client)
                        await self._stop.wait()
                        nursery.cancel_scope.cancel(reason="MCP connection closing")
                    # the SDK's close (an HTTP session's DELETE; a child's stdin closed, then
                    # terminated) is bounded: a server that never answers holds up no call
                    scope.deadline = trio.current_time() + CLOSE_TIMEOUT
            if scope.cancelled_caught and self.client is None and not self._stop.is_set():
                self.failure = f"no answer within {self._connect_timeout:g} s"
        except BaseExceptionGroup as group:
            cancelled = group.split(trio.Cancelled)[0]
            if self.failure is None:
                self.failure = describe(group.split(trio.Cancelled)[1] or group)
            if cancelled is not None:  # someone else's cancellation: it goes on, alone
                raise _first(cancelled) from None
            mcp_logger.debug("MCP connection failed: %s", self.failure, exc_info=True)
        except Exception as exc:
            if self.failure is None:
                self.failure = describe(exc)
            mcp_logger.debug("MCP connection failed: %s", self.failure, exc_info=True)
        finally:
            self.client = None
            self.settled.set()
            self.ended.set()
