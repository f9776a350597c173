"""The JSON-lines protocol of ``pi-trio rpc`` (stdin/stdout) and ``pi-trio serve`` (TCP).

One :class:`RpcSession` drives one agent from one line transport. Each input line is a command
object with a ``type`` and an optional ``id``; each is answered by one ``response`` line that
echoes both. Every agent event is written as a line of pi's JSON (``pt.to_json(event)``). A
prompt runs in a task of the session's nursery, so ``steer``, ``follow_up``, ``abort`` and
``get_state`` are served while it streams. A line that is not valid JSON, not an object, of an
unknown type, or whose message does not fit pi's wire format gets an error response; the
session and the agent go on untouched. The protocol is documented in docs/rpc.md.

Over TCP each connection is its own session: whatever fails inside one (a bug, an agent
factory that raises, a resource running out) ends that connection only, after an ``error``
line to its client when one can still be written and an ERROR record on the
``pi_trio.cli`` logger; the server goes on serving every other connection.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .._errors import PiError, WireFormatError
from .._logging import cli_logger
from ..agent import Agent
from ..events import AgentEvent
from ..messages import AgentMessage, ImageContent
from ..wire import from_json, to_json
from ._lines import LineTooLongError, LineTransport, StdioLines, StreamLines

__all__ = ["COMMANDS", "RpcSession", "run_stdio", "serve_tcp_rpc"]

COMMANDS = ("abort", "configure", "follow_up", "get_state", "prompt", "reset", "steer")
UPDATE_SHAPES = ("full", "compact")
"""``message_update`` lines: pi's shape (the whole partial message, twice) or only the delta."""

_CONNECTION_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)
_ERROR_LINE_SECONDS = 1.0


class CommandError(Exception):
    """A command that cannot be carried out; its text goes into the error response."""


def encode(value: Any) -> bytes:
    """One protocol line (without the newline): compact JSON, UTF-8, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode(line: bytes) -> Any:
    """Parse one line as strict JSON (NaN and Infinity are rejected)."""
    return json.loads(line, parse_constant=_reject_constant)


def compact_update(line: dict[str, Any]) -> dict[str, Any]:
    """A ``message_update`` line without the partial message it repeats (twice) in pi's shape.

    ``{"type": "message_update", "assistantMessageEvent": {"type": "text_delta",
    "contentIndex": 0, "delta": "..."}}``: a client rebuilds the message from the deltas, or
    takes it whole from ``message_end``.
    """
    event = {k: v for k, v in line["assistantMessageEvent"].items() if k != "partial"}
    return {"type": "message_update", "assistantMessageEvent": event}


def _message(value: Any, field: str) -> str | AgentMessage:
    """A message field: plain text, or a message object in pi's JSON."""
    if isinstance(value, str):
        if not value.strip():
            raise CommandError(f"{field}: empty; send some text or a message object")
        return value
    if isinstance(value, dict):
        try:
            message: AgentMessage = from_json(value, AgentMessage)
        except WireFormatError as exc:
            raise CommandError(f"{field}: {exc}") from None
        return message
    raise CommandError(f"{field}: expected a string or a message object")


def state_json(agent: Agent) -> dict[str, Any]:
    """The agent's state as the ``get_state`` response carries it."""
    state = agent.state
    return {
        "systemPrompt": state.system_prompt,
        "model": to_json(state.model),
        "thinkingLevel": state.thinking_level,
        "tools": [t.name for t in state.tools],
        "isStreaming": state.is_streaming,
        "pendingToolCalls": sorted(state.pending_tool_calls),
        "errorMessage": state.error_message,
        "hasQueuedMessages": agent.has_queued_messages(),
        "messages": [to_json(m) for m in state.messages],
    }


class RpcSession:
    """Serves the protocol for one agent over one transport until the input ends.

    At end of input a running prompt is allowed to finish (its events are still written);
    then :meth:`run` returns. Cancelling :meth:`run` aborts the prompt (the agent closes its
    transcript in pi's aborted shape) and lets ``Cancelled`` out.
    """

    def __init__(self, agent: Agent, transport: LineTransport) -> None:
        self.agent = agent
        self.transport = transport
        self._run_scope: trio.CancelScope | None = None
        self._run_done: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        self.gone: BaseException | None = None
        """Why the client is gone (its connection broke), once it is."""
        self.update_shape = "full"
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "prompt": self._prompt,
            "steer": self._steer,
            "follow_up": self._follow_up,
            "abort": self._abort,
            "get_state": self._get_state,
            "reset": self._reset,
            "configure": self._configure,
        }

    @property
    def busy(self) -> bool:
        """True from the moment a prompt is accepted until its task has finished."""
        return self._run_done is not None and not self._run_done.is_set()

    async def send(self, value: Any) -> None:
        """Write one line. A client that went away (a broken pipe, a reset connection) ends
        the session: nothing more is written, the run is aborted, and :attr:`gone` says why."""
        if self.gone is not None:
            return
        try:
            await self.transport.send_line(encode(value))
        except _CONNECTION_ERRORS as exc:
            self._lost(exc)

    def _lost(self, exc: BaseException) -> None:
        if self.gone is None:
            self.gone = exc
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel(reason="the client went away")

    async def _on_event(self, event: AgentEvent) -> None:
        line = to_json(event)
        if self.update_shape == "compact" and line["type"] == "message_update":
            line = compact_update(line)
        await self.send(line)

    async def run(self) -> None:
        unsubscribe = self.agent.subscribe(self._on_event)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self._read_commands()
        finally:
            self._nursery = None
            unsubscribe()

    async def _read_commands(self) -> None:
        while True:
            try:
                line = await self.transport.receive_line()
            except LineTooLongError as exc:
                await self._reply(None, None, error=str(exc))
                continue
            except _CONNECTION_ERRORS as exc:
                self._lost(exc)
                return
            if line is None or self.gone is not None:
                return
            if line.strip():
                await self.handle_line(line)

    async def handle_line(self, line: bytes) -> None:
        """Parse and carry out one command line, answering with one response line."""
        try:
            command = decode(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError and bad UTF-8 included
            await self._reply(None, None, error=f"invalid JSON: {exc}")
            return
        if not isinstance(command, dict):
            await self._reply(None, None, error="a command must be a JSON object")
            return
        request_id = command.get("id")
        kind = command.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            known = ", ".join(COMMANDS)
            await self._reply(
                request_id,
                kind if isinstance(kind, str) else None,
                error=f"unknown command type {kind!r}; known: {known}",
            )
            return
        assert isinstance(kind, str)
        try:
            data = await handler(command)
        except CommandError as exc:
            await self._reply(request_id, kind, error=str(exc))
        except PiError as exc:
            await self._reply(request_id, kind, error=f"{type(exc).__name__}: {exc}")
        else:
            await self._reply(request_id, kind, data=data)

    async def _reply(
        self, request_id: Any, command: str | None, *, data: Any = None, error: str | None = None
    ) -> None:
        reply: dict[str, Any] = {"type": "response", "command": command}
        if request_id is not None:
            reply["id"] = request_id
        reply["success"] = error is None
        if error is not None:
            reply["error"] = error
        elif data is not None:
            reply["data"] = data
        try:
            await self.send(reply)
        except ValueError:  # an id that JSON cannot carry (NaN was rejected on input)
            reply.pop("id", None)
            await self.send(reply)

    # --- commands --------------------------------------------------------------------------

    async def _prompt(self, command: dict[str, Any]) -> None:
        if self.busy:
            raise CommandError("agent is busy: send steer or follow_up, or abort first")
        raw = command.get("message")
        if raw is None:
            raise CommandError("message: required (a string, a message object or a list)")
        prompt: str | AgentMessage | list[AgentMessage]
        if isinstance(raw, list):
            if not raw:
                raise CommandError("message: an empty list; send at least one message")
            prompt = []
            for i, item in enumerate(raw):
                if not isinstance(item, dict):
                    raise CommandError(f"message[{i}]: expected a message object")
                prompt.append(_message(item, f"message[{i}]"))  # type: ignore[arg-type]
        else:
            prompt = _message(raw, "message")
        images = self._images(command.get("images"))
        if images and not isinstance(prompt, str):
            raise CommandError("images: only with a text message")
        if self._nursery is None:
            raise CommandError("the session is not running")
        done = trio.Event()
        scope = trio.CancelScope()
        self._run_done, self._run_scope = done, scope
        self._nursery.start_soon(self._run_prompt, prompt, images, scope, done)

    async def _run_prompt(
        self,
        prompt: str | AgentMessage | list[AgentMessage],
        images: list[ImageContent] | None,
        scope: trio.CancelScope,
        done: trio.Event,
    ) -> None:
        try:
            with scope:
                await self.agent.prompt(prompt, images=images)
        except PiError as exc:
            await self.send({"type": "error", "error": f"{type(exc).__name__}: {exc}"})
        finally:
            done.set()

    def _images(self, raw: Any) -> list[ImageContent] | None:
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise CommandError("images: expected a list of image objects")
        images: list[ImageContent] = []
        for i, item in enumerate(raw):
            try:
                image: ImageContent = from_json(item, ImageContent)
            except WireFormatError as exc:
                raise CommandError(f"images[{i}]: {exc}") from None
            try:
                base64.b64decode(image.data, validate=True)
            except binascii.Error:
                raise CommandError(
                    f"images[{i}].data: not valid base64 (standard alphabet, padded, no line "
                    "breaks); send the image file's bytes base64-encoded"
                ) from None
            images.append(image)
        return images

    async def _steer(self, command: dict[str, Any]) -> None:
        self.agent.steer(_message(command.get("message"), "message"))

    async def _follow_up(self, command: dict[str, Any]) -> None:
        self.agent.follow_up(_message(command.get("message"), "message"))

    async def _stop_run(self) -> None:
        """Abort the current prompt (if any) and wait until its task has finished."""
        self.agent.abort()
        if self._run_scope is not None:
            self._run_scope.cancel()
        if self._run_done is not None:
            await self._run_done.wait()
        await self.agent.wait_for_idle()

    async def _abort(self, command: dict[str, Any]) -> None:
        await self._stop_run()

    async def _get_state(self, command: dict[str, Any]) -> dict[str, Any]:
        return state_json(self.agent)

    async def _configure(self, command: dict[str, Any]) -> dict[str, Any]:
        shape = command.get("messageUpdates", self.update_shape)
        if shape not in UPDATE_SHAPES:
            raise CommandError(f"messageUpdates: expected one of {', '.join(UPDATE_SHAPES)}")
        self.update_shape = shape
        return {"messageUpdates": self.update_shape}

    async def _reset(self, command: dict[str, Any]) -> None:
        await self._stop_run()
        self.agent.reset()


AgentFactory = Callable[[], Agent]


async def run_stdio(make_agent: AgentFactory) -> None:
    """``pi-trio rpc``: one agent, commands on stdin, responses and events on stdout."""
    await RpcSession(make_agent(), StdioLines()).run()


async def serve_tcp_rpc(
    make_agent: AgentFactory,
    port: int,
    host: str = "127.0.0.1",
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """``pi-trio serve``: the same protocol over TCP, a fresh agent per connection.

    Runs until cancelled. A connection that breaks ends its own session only (its run is
    aborted), and so does any other failure inside it (an ``error`` line is sent to that
    client if possible and the failure logged on ``pi_trio.cli``): it never takes the server
    down. ``task_status.started`` gets the listeners (``port=0`` picks a free port: read it
    from ``listeners[0].socket.getsockname()``).
    """

    async def handle(stream: trio.SocketStream) -> None:
        peer = _peer(stream)
        async with stream:
            lines = StreamLines(stream)
            session: RpcSession | None = None
            failed = False
            try:
                session = RpcSession(make_agent(), lines)
                await session.run()
            except* Exception as group:  # Cancelled and KeyboardInterrupt go on out
                failure = _first(group)
                cli_logger.error("connection from %s failed; closing it", peer, exc_info=failure)
                await _send_failure(lines, failure)
                failed = True
        # one line per connection (the failure's record is its line)
        if session is not None and session.gone is not None:
            log(f"connection from {peer}: the client went away ({session.gone})")
        elif not failed:
            log(f"connection from {peer}: closed")

    await trio.serve_tcp(handle, port, host=host, task_status=task_status)


def _first(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def _send_failure(lines: StreamLines, failure: BaseException) -> None:
    """Tell the client why its connection is closing, if it can still be told (bounded)."""
    text = f"internal error: {type(failure).__name__}: {failure}"[:500]
    with trio.move_on_after(_ERROR_LINE_SECONDS):
        with contextlib.suppress(*_CONNECTION_ERRORS):
            await lines.send_line(encode({"type": "error", "error": f"{text}; closing"}))


def _peer(stream: trio.SocketStream) -> str:
    try:
        host, port, *_ = stream.socket.getpeername()
    except (OSError, ValueError):
        return "?"
    return f"{host}:{port}"


def log(text: str) -> None:
    print(f"pi-trio: {text}", file=sys.stderr, flush=True)
