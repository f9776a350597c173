"""``open_stdio_server`` / ``open_http_server`` and the :class:`McpServer` they hand out.

Exceptions::

    PiError
     +-- McpServerError   the server could not be reached, broke, timed out or refused a call
     +-- McpToolError     the tool ran and answered isError (the message is the server's text)

Either one raised from a tool's ``execute`` becomes an error tool result in the loop, so a
failing server never fails a run: the model reads what happened. A broken connection (a stdio
child that exited, an HTTP session the server no longer knows, a transport that failed) is
closed; the next call opens a new one.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Any, TextIO

import httpx2
import mcp_types as types
import trio
from mcp import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from .._errors import PiError
from .._logging import mcp_logger
from ..events import ToolResult
from ..tools import AgentTool, OnUpdate
from ._connection import Connection, TransportFactory, describe
from ._results import McpToolError, progress_result, to_tool_result

__all__ = ["McpServer", "McpServerError", "McpToolError", "open_http_server", "open_stdio_server"]

_TRANSPORT_ENDED = frozenset({"Connection closed", "SSE stream ended without a response"})
"""The SDK's own texts for a request whose transport ended (code ``CONNECTION_CLOSED``): the
connection is closed and the next call opens a new one. Any other error answer, whatever its
code (a server's -32603 for one failing handler, its own -32000), fails that request alone."""
_MAX_PAGES = 100
_NOT_IN_A_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
"""What model providers refuse in a tool's name (OpenAI, Anthropic: ``[A-Za-z0-9_-]{1,64}``),
where MCP allows dots and longer names: such a character becomes ``_`` in the name the model
sees (the server is still called with its own name)."""


class McpServerError(PiError):
    """An MCP server could not be reached, broke during a call, timed out or refused it.

    The message starts with ``MCP server '<name>':`` and says what happened.
    """


class McpServer:
    """One MCP server (a stdio child or a streamable-HTTP endpoint) inside its ``open_*`` block.

    Made by :func:`open_stdio_server` / :func:`open_http_server`, not directly. The connection
    is opened when the block is entered and re-opened by the first call after it broke;
    ``connections_opened`` counts them (1 + reconnections).
    """

    def __init__(
        self,
        name: str,
        make_transport: TransportFactory,
        nursery: trio.Nursery,
        *,
        timeout: float | None,
        tool_timeouts: Mapping[str, float | None],
        connect_timeout: float,
        mode: str,
        closed_text: str,
        sessions: bool = False,
    ) -> None:
        self._name = name
        self._sessions = sessions  # an HTTP server's sessions may expire
        self._closed_text = closed_text
        self._make_transport = make_transport
        self._nursery = nursery
        self._timeout = timeout
        self._tool_timeouts = dict(tool_timeouts)
        self._connect_timeout = connect_timeout
        self._mode = mode
        self._connection: Connection | None = None
        self._connect_lock = trio.Lock()
        self._closed = False
        self._listing: list[types.Tool] | None = None
        self._tools_changed = False
        self.connections_opened = 0

    @property
    def name(self) -> str:
        """The name errors and logs use for this server."""
        return self._name

    @property
    def tools_changed(self) -> bool:
        """True when the server announced ``tools/list_changed`` since the last
        :meth:`tools`: call it again (before the next prompt) to get the new list."""
        return self._tools_changed

    def _fail(self, what: str) -> McpServerError:
        return McpServerError(f"MCP server {self._name!r}: {what}")

    def _note_tools_changed(self) -> None:
        self._tools_changed = True

    async def _connect(self) -> Connection:
        """The live connection, opening one when there is none or the last one ended.

        Raises:
            McpServerError: the server could not be started or reached, or did not answer the
                handshake within ``connect_timeout``.
        On cancellation the connection being opened goes on opening (a later call uses it).
        """
        async with self._connect_lock:
            connection = self._connection
            if connection is not None and connection.stopping:
                await connection.ended.wait()  # one child or session at a time (bounded close)
            if connection is None or connection.ended.is_set():
                if self._closed:
                    raise self._fail("its block has closed")
                connection = Connection(
                    self._make_transport,
                    mode=self._mode,
                    connect_timeout=self._connect_timeout,
                    closed_text=self._closed_text,
                    on_tools_changed=self._note_tools_changed,
                )
                self._connection = connection
                self.connections_opened += 1
                self._nursery.start_soon(connection.run)
            await connection.settled.wait()
        if connection.client is None:
            raise self._fail(f"could not connect: {connection.failure or 'the connection closed'}")
        return connection

    async def list_tools(self) -> list[types.Tool]:
        """The server's tools as the SDK describes them (every page of ``tools/list``).

        Raises:
            McpServerError: the server could not be reached or did not answer in ``timeout``.
        On cancellation the request is cancelled on the server and nothing is kept.
        """
        self._tools_changed = False  # a change announced from here on is not lost
        try:
            return await self._list_tools()
        except BaseException:
            self._tools_changed = True  # not listed after all
            raise

    async def _list_tools(self) -> list[types.Tool]:
        connection = await self._connect()
        listing: list[types.Tool] = []
        cursor: str | None = None
        try:
            with trio.fail_after(self._timeout if self._timeout is not None else float("inf")):
                cursors: set[str] = set()
                for _ in range(_MAX_PAGES):
                    assert connection.client is not None
                    page = await connection.client.list_tools(cursor=cursor)
                    listing.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None or cursor in cursors:  # the end, or a server going round
                        break
                    cursors.add(cursor)
        except trio.TooSlowError:
            raise self._fail(f"tools/list gave no answer within {self._timeout:g} s") from None
        except MCPError as exc:
            if exc.code == types.METHOD_NOT_FOUND:  # a server without tools
                listing = []
            else:
                raise self._request_error(connection, "tools/list", exc) from None
        except ValidationError as exc:  # an answer that is not MCP: that request's failure
            raise self._fail(f"tools/list failed: {describe(exc)}") from None
        except Exception as exc:  # the transport failed
            connection.stop(describe(exc))
            raise self._fail(f"tools/list failed: {describe(exc)}") from None
        self._listing = listing
        return listing

    async def tools(self, *, prefix: str | None = None) -> list[AgentTool]:
        """The server's tools as :class:`pt.AgentTool` objects, listed afresh.

        Each tool's ``parameters`` is the server's input JSON schema (arguments are validated
        against it like any tool's), its description the server's, its name the server's or
        ``f"{prefix}_{name}"``. Calling one runs :meth:`call_tool` with the server's timeout
        (``tool_timeouts`` overrides it per tool). A tool whose schema cannot be used, or
        whose name a tool before it took, is left out (a warning on ``pi_trio.mcp``).

        Raises:
            McpServerError: as :meth:`list_tools`.
        On cancellation the listing request is cancelled on the server, or the worker thread
        checking the schemas is abandoned (its tools discarded).
        """
        listing = await self.list_tools()
        # checking each schema takes milliseconds (seconds for a server with a thousand
        # tools): a worker thread, so the event loop goes on; abandoned on cancellation
        return await trio.to_thread.run_sync(
            self._usable_tools, listing, prefix, abandon_on_cancel=True
        )

    def _usable_tools(self, listing: list[types.Tool], prefix: str | None) -> list[AgentTool]:
        built: list[tuple[types.Tool, AgentTool]] = []
        for tool in listing:
            if not tool.name:
                self._leave_out(tool.name, "a tool needs a name")
                continue
            try:
                built.append((tool, self._agent_tool(tool, prefix)))
            except ValueError as exc:  # a schema pi_trio cannot validate arguments against
                self._leave_out(tool.name, str(exc))
        # a name the server gave as it is belongs to that tool, whatever comes before it
        kept = {made.name for tool, made in built if _keeps_its_name(tool.name, prefix)}
        tools: list[AgentTool] = []
        named: set[str] = set()
        for tool, made in built:
            renamed = not _keeps_its_name(tool.name, prefix)
            if made.name in named or (renamed and made.name in kept):
                self._leave_out(tool.name, f"another of its tools is named {made.name!r}")
                continue
            named.add(made.name)
            tools.append(made)
        return tools

    def _leave_out(self, remote: str, why: str) -> None:
        mcp_logger.warning(
            "MCP server %r: its tool %r is left out of the agent's tools: %s",
            self._name,
            remote,
            why,
        )

    def _agent_tool(self, tool: types.Tool, prefix: str | None) -> AgentTool:
        remote = tool.name
        timeout = self._tool_timeouts.get(remote, self._timeout)

        async def execute(tool_call_id: str, params: Any, on_update: OnUpdate) -> ToolResult:
            return await self.call_tool(remote, params, timeout=timeout, on_update=on_update)

        return AgentTool(
            name=_NOT_IN_A_TOOL_NAME.sub("_", _full_name(remote, prefix))[:64],
            label=tool.title or remote,
            description=tool.description or "",
            parameters=tool.input_schema,
            execute=execute,
        )

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | EllipsisType | None = ...,  # noqa: ASYNC109 - answered by a server cancel
        on_update: OnUpdate | None = None,
    ) -> ToolResult:
        """Call the server's tool ``name``; progress notifications go to ``on_update``.

        Args:
            name: the tool's name on the server (without any prefix).
            arguments: its arguments (a JSON object).
            timeout: seconds to wait for the answer (None: no limit; default: the server's
                ``timeout``). When it runs out the call is cancelled on the server.
            on_update: awaited with a partial :class:`pt.ToolResult` for each progress
                notification (``details``: progress, total, message).

        Raises:
            McpToolError: the tool answered with ``isError``; the message is its text.
            McpServerError: connecting failed, the connection broke during the call (the next
                call reconnects), the HTTP session expired, or the timeout ran out.
        On cancellation (abort, deadline) the SDK sends ``notifications/cancelled`` for the
        request (shielded, bounded) and ``Cancelled`` propagates; the connection stays open.
        """
        if timeout is ...:
            timeout = self._timeout
        connection = await self._connect()
        client = connection.client
        if client is None:
            raise self._fail(f"the connection closed before {name!r} was called")

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if on_update is not None:
                await on_update(progress_result(progress, total, message))

        started = trio.current_time()
        try:
            result = await client.call_tool(
                name,
                dict(arguments or {}),
                read_timeout_seconds=timeout,
                progress_callback=report,
            )
        except MCPError as exc:
            # the SDK's own timer ran out (a server may answer with that code too)
            waited = trio.current_time() - started
            if exc.code == types.REQUEST_TIMEOUT and timeout is not None and waited >= timeout:
                raise self._fail(
                    f"tool {name!r} gave no answer within {timeout:g} s; "
                    "the call was cancelled on the server"
                ) from None
            raise self._request_error(connection, f"tool {name!r}", exc) from None
        except ValidationError as exc:  # a result that is not MCP: this call's failure
            raise self._fail(f"tool {name!r} failed: {describe(exc)}") from None
        except Exception as exc:  # the transport failed
            connection.stop(describe(exc))
            raise self._fail(
                f"tool {name!r} failed: {describe(exc)}; the next call reconnects"
            ) from None
        return to_tool_result(result)

    def _request_error(self, connection: Connection, what: str, exc: MCPError) -> McpServerError:
        """The error of one request the server (or the SDK) answered with ``exc``: the
        connection is closed only when its transport ended or its HTTP session expired."""
        message = exc.message
        if self._sessions and exc.code == types.INVALID_REQUEST and "session" in message.lower():
            connection.stop(message)
            return self._fail(
                f"the HTTP session expired ({message}) before {what} ran; "
                "the next call opens a new session"
            )
        if exc.code == types.CONNECTION_CLOSED and message in _TRANSPORT_ENDED:
            connection.stop(message)
            why = f"the connection closed during the call ({connection.failure or message})"
            return self._fail(f"{what} failed: {why}; the next call reconnects")
        return self._fail(f"{what} failed: {message} (MCP error {exc.code})")

    def _close(self) -> None:
        self._closed = True
        if self._connection is not None:
            self._connection.stop()


def _full_name(remote: str, prefix: str | None) -> str:
    return remote if prefix is None else f"{prefix}_{remote}"


def _keeps_its_name(remote: str, prefix: str | None) -> bool:
    """Whether the server's name for a tool reaches the model whole: no character replaced,
    not cut at 64 (the prefix, the caller's choice, does not count against it)."""
    return _NOT_IN_A_TOOL_NAME.search(remote) is None and len(_full_name(remote, prefix)) <= 64


def _child_stderr() -> TextIO:
    """Where a stdio server's stderr goes: this process's stderr as it is now (the SDK's
    default is the one at its import, which may have been a redirection without a file, a
    test's capture, say), or the real one when the current one has no file descriptor."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            continue
    return sys.stderr


def _unwrapped(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a nursery's group stands for: the block's own, else a Cancelled."""
    rest = group.split(trio.Cancelled)[1]
    leaf: BaseException = rest if rest is not None else group
    while isinstance(leaf, BaseExceptionGroup) and (rest is None or len(leaf.exceptions) == 1):
        leaf = leaf.exceptions[0]
    return leaf


@contextlib.asynccontextmanager
async def _open_server(
    name: str, make_transport: TransportFactory, **options: Any
) -> AsyncIterator[McpServer]:
    body_exc: BaseException | None = None  # the block's own: out as it was raised
    try:
        async with trio.open_nursery() as nursery:
            server = McpServer(name, make_transport, nursery, **options)
            try:
                await server._connect()
                try:
                    yield server
                except BaseException as exc:
                    body_exc = exc  # re-raised below, outside the nursery: never wrapped
            finally:
                server._close()
    except BaseExceptionGroup as group:
        plain = _unwrapped(group)
        if body_exc is None or (
            isinstance(body_exc, trio.Cancelled) and not isinstance(plain, trio.Cancelled)
        ):
            body_exc = plain  # a connection task's failure wins over the Cancelled it caused
    if body_exc is not None:
        raise body_exc


def open_stdio_server(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    name: str | None = None,
    timeout: float | None = 60.0,
    tool_timeouts: Mapping[str, float | None] | None = None,
    connect_timeout: float = 30.0,
    mode: str = "auto",
) -> contextlib.AbstractAsyncContextManager[McpServer]:
    """Start an MCP server as a child process and talk to it over its stdin/stdout.

    ``async with open_stdio_server("python", ["server.py"]) as server: ...``. Entering starts
    the child and runs the MCP handshake; leaving (normally, by an exception or a
    cancellation) closes the child's stdin, waits for it briefly, then terminates it: no task
    and no process outlives the block. A child that exits mid-block is started again by the
    next call.

    Args:
        command: the program to run (looked up on PATH).
        args: its arguments.
        env: extra environment variables, added to a small inherited set (HOME, PATH, ...).
        cwd: the child's working directory.
        name: the server's name in errors (default: the command line).
        timeout: default seconds a tool call (and tools/list) may take; None for no limit.
        tool_timeouts: per-tool overrides of ``timeout``, by the server's tool name.
        connect_timeout: seconds the start and the handshake may take.
        mode: the SDK's protocol negotiation: "auto" (the default), "legacy" or a version.

    Raises:
        McpServerError: the child could not be started or did not complete the handshake.
    """
    params = StdioServerParameters(
        command=command, args=list(args), env=None if env is None else dict(env),
        cwd=None if cwd is None else Path(cwd),
        encoding_error_handler="replace",  # one bad byte must not wedge the connection
    )  # fmt: skip
    label = name or " ".join([Path(command).name, *args])

    def make_transport() -> contextlib.AbstractAsyncContextManager[tuple[Any, Any]]:
        return stdio_client(params, errlog=_child_stderr())

    return _open_server(
        label, make_transport, timeout=timeout, tool_timeouts=tool_timeouts or {},
        connect_timeout=connect_timeout, mode=mode,
        closed_text="the server process exited or closed its output",
    )  # fmt: skip


def open_http_server(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    name: str | None = None,
    timeout: float | None = 60.0,
    tool_timeouts: Mapping[str, float | None] | None = None,
    connect_timeout: float = 30.0,
    mode: str = "auto",
) -> contextlib.AbstractAsyncContextManager[McpServer]:
    """Talk to an MCP server's streamable-HTTP endpoint (``https://host/mcp``).

    Entering runs the MCP handshake; leaving ends the HTTP session (a DELETE, bounded) and
    closes the connections: no task outlives the block. An expired session or a failed
    transport is re-initialized by the next call.

    Args:
        url: the endpoint.
        headers: sent with every request (an ``Authorization`` header, say); never logged.
        name: the server's name in errors (default: the URL without query or credentials).
        timeout: as for :func:`open_stdio_server`.
        tool_timeouts: as for :func:`open_stdio_server`.
        connect_timeout: as for :func:`open_stdio_server`.
        mode: as for :func:`open_stdio_server`.

    Raises:
        McpServerError: the server could not be reached or did not complete the handshake.
    """
    parsed = httpx2.URL(url)
    label = name or str(parsed.copy_with(userinfo=b"", query=None, fragment=None))
    fixed_headers = dict(headers or {})

    @contextlib.asynccontextmanager
    async def make_transport() -> AsyncIterator[tuple[Any, Any]]:
        limits = httpx2.Timeout(connect_timeout, read=300.0)
        async with (
            httpx2.AsyncClient(headers=fixed_headers, timeout=limits) as http,
            streamable_http_client(url, http_client=http) as streams,
        ):
            yield streams

    return _open_server(
        label, make_transport, timeout=timeout, tool_timeouts=tool_timeouts or {},
        connect_timeout=connect_timeout, mode=mode, closed_text="the HTTP transport closed",
        sessions=True,
    )  # fmt: skip
