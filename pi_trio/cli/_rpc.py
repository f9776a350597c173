"""pi-coding-agent 1.6's ``--mode rpc`` protocol, as ``pi-trio rpc`` (stdin/stdout) and
``pi-trio serve`` (TCP) speak it.

One :class:`RpcSession` drives the agent of the current session of a :class:`SessionHost`
from one line transport. Each input line is a command object with a ``type`` and an optional
``id``; each is answered by one ``response`` line in pi's shape (``{"id", "type": "response",
"command", "success", "data" | "error"}``). Agent events are written as pi 1.6's RPC writes
them: pi's JSON, with ``message_update`` reduced to its stream event and usage, ``agent_end``
with ``willRetry``, and pi's session events ``queue_update``, ``thinking_level_changed`` and
``agent_settled`` (after every run). A prompt runs in a task of the session's nursery, so
``steer``, ``follow_up``, ``abort`` and ``get_state`` are served while it streams. A line that
is not JSON, of an unknown type, or with bad fields gets an error response; the session and
the agent go on untouched. The protocol is documented in docs/rpc.md; the commands are in
:mod:`._rpc_commands`.

Over TCP each connection is its own set of in-memory sessions: whatever fails inside one (a
bug, an agent factory that raises, a resource running out) ends that connection only, after an
``error`` line to its client when one can still be written and an ERROR record on the
``pi_trio.cli`` logger; the server goes on serving every other connection.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable
from logging import ERROR
from typing import Any

import trio

from .._callbacks import exception_line
from .._errors import PiError
from .._logging import cli_logger, log_failure
from ..agent import Agent
from ..events import AgentEvent
from ..messages import AgentMessage
from ..wire import to_json
from ._lines import LineTooLongError, LineTransport, StdioLines, StreamLines
from ._rpc_commands import (
    NULL_DATA,
    UNSUPPORTED,
    CommandError,
    PiCommands,
    check_calls_answered,
    images_field,
    message_field,
    queue_texts,
)
from ._rpc_json import decode, encode
from ._rpc_sessions import MemorySessions, SessionError, SessionHost, open_durable_sessions

__all__ = ["COMMANDS", "RpcSession", "run_stdio", "serve_tcp_rpc"]

_SESSION_COMMANDS = (
    "prompt", "steer", "follow_up", "abort", "clear_queue", "get_state", "get_messages",
    "set_model", "cycle_model", "get_available_models", "set_thinking_level",
    "cycle_thinking_level", "get_available_thinking_levels", "set_steering_mode",
    "set_follow_up_mode", "new_session", "switch_session", "get_session_stats", "get_entries",
    "get_last_assistant_text", "compact", "set_auto_compaction",
)  # fmt: skip
_ADDED_COMMANDS = ("approve", "deny")  # pi_trio's: decisions about tool calls that wait
COMMANDS = (*_SESSION_COMMANDS, *UNSUPPORTED, *_ADDED_COMMANDS)
"""Every command type of pi 1.6's RPC (those carried out, then those refused with a reason),
then pi_trio's own."""

_CONNECTION_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)
_ERROR_LINE_SECONDS = 1.0
_MISSING = object()


def pi_update(line: dict[str, Any]) -> dict[str, Any]:
    """A ``message_update`` line as pi 1.6's RPC writes it: the message's usage and the stream
    event without the partial message (a ``toolcall_start`` names its call's id and tool)."""
    event = dict(line["assistantMessageEvent"])
    partial = event.pop("partial", None)
    if event["type"] == "toolcall_start" and isinstance(partial, dict):
        call = partial["content"][event["contentIndex"]]
        event["id"], event["toolName"] = call["id"], call["name"]
    return {
        "type": "message_update",
        "usage": line["message"].get("usage"),
        "assistantMessageEvent": event,
    }


class RpcSession(PiCommands):
    """Serves pi's RPC protocol for a host's sessions over one transport until input ends.

    At end of input a running prompt is allowed to finish (its events are still written);
    then :meth:`run` returns. Cancelling :meth:`run` aborts the prompt (the agent closes its
    transcript in pi's aborted shape) and lets ``Cancelled`` out.
    """

    def __init__(self, host: SessionHost, transport: LineTransport) -> None:
        self.host = host
        self.transport = transport
        self._run_scope: trio.CancelScope | None = None
        self._run_done: trio.Event | None = None
        self._abort_requested = False
        self._nursery: trio.Nursery | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._queues_sent: dict[str, list[str]] = {"steering": [], "followUp": []}
        self.gone: BaseException | None = None
        """Why the client is gone (its connection broke), once it is."""
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "prompt": self._prompt,
            "approve": self._approve,
            "deny": self._deny,
            **self.handlers(),
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

    async def sync_queue(self) -> None:
        queues = queue_texts(self.agent)
        if queues != self._queues_sent:
            self._queues_sent = queues
            await self.send({"type": "queue_update", **queues})

    async def _on_event(self, event: AgentEvent) -> None:
        line = to_json(event)
        kind = line["type"]
        if kind == "message_update":
            line = pi_update(line)
        elif kind == "message_start" and line["message"].get("role") != "assistant":
            # pi: a delivered queued message (a user one, or any other kind) leaves the queue
            await self.sync_queue()
        elif kind == "agent_end":
            line["willRetry"] = False
        await self.send(line)

    def _follow(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = self.agent.subscribe(self._on_event)

    async def rebind(self, change: Callable[[], Awaitable[None]]) -> None:
        previous = self.agent
        try:
            await change()  # the new session first: refused, the current one goes on untouched
        except SessionError as exc:
            raise CommandError(str(exc)) from None
        try:
            await self.stop_run(previous)  # its closing events still go out
        finally:
            self._follow()
            await self.sync_queue()

    async def run(self) -> None:
        self._follow()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self._read_commands()
        finally:
            self._nursery = None
            if self._unsubscribe is not None:
                self._unsubscribe()

    async def _read_commands(self) -> None:
        while True:
            try:
                line = await self.transport.receive_line()
            except LineTooLongError as exc:
                await self._reply(_MISSING, "parse", error=f"Failed to parse command: {exc}")
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
            await self._reply(_MISSING, "parse", error=f"Failed to parse command: {exc}")
            return
        if not isinstance(command, dict):
            error = "Failed to parse command: a command must be a JSON object"
            await self._reply(_MISSING, "parse", error=error)
            return
        if command.get("type") == "extension_ui_response":
            return  # pi drops answers to requests it did not make; pi-trio makes none
        request_id = command.get("id", _MISSING)
        kind = command.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            reason = UNSUPPORTED.get(kind) if isinstance(kind, str) else None
            if reason is not None:
                error = f"{kind} is not supported by pi-trio: {reason}"
            else:
                error = f"Unknown command: {kind}"
            await self._reply(request_id, kind, error=error)
            return
        try:
            data = await handler(command)
        except CommandError as exc:
            await self._reply(request_id, kind, error=str(exc))
        except PiError as exc:
            await self._reply(request_id, kind, error=f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # pi-trio's bug: the command fails, the process goes on
            log_failure(cli_logger, ERROR, exc, "RPC command %s failed", kind)
            error = f"{kind} failed inside pi-trio: {type(exc).__name__}: {exception_line(exc)}"
            await self._reply(request_id, kind, error=error)
        else:
            await self._reply(request_id, kind, data=data)

    async def _reply(
        self, request_id: Any, command: Any, *, data: Any = None, error: str | None = None
    ) -> None:
        """One response in pi's shape; ``id`` only when the command had one."""
        reply: dict[str, Any] = {} if request_id is _MISSING else {"id": request_id}
        reply.update(type="response", command=command, success=error is None)
        if error is not None:
            reply["error"] = error
        elif data is NULL_DATA:
            reply["data"] = None
        elif data is not None:
            reply["data"] = data
        await self.send(reply)

    # --- prompt ----------------------------------------------------------------------------

    async def _prompt(self, command: dict[str, Any]) -> Any:
        prompt = self._prompt_message(command.get("message"))
        images = images_field(command.get("images"))
        if images and not isinstance(prompt, str):
            raise CommandError("images: only with a text message")
        behavior = command.get("streamingBehavior")
        if behavior not in (None, "steer", "followUp"):
            raise CommandError(f"streamingBehavior: expected steer or followUp, got {behavior!r}")
        waiting = self.agent.state.pending_approvals if not self.busy else ()
        if self.busy or waiting:
            if behavior is None and waiting:  # refused here, not after a "started" reply
                calls = ", ".join(repr(call.id) for call in waiting)
                raise CommandError(
                    f"tool calls wait for a decision ({calls}): send an approve or deny "
                    "command for each first, or specify streamingBehavior ('steer' or "
                    "'followUp') to queue the message until they have results"
                )
            if behavior is None:
                raise CommandError(
                    "Agent is already processing. Specify streamingBehavior ('steer' or "
                    "'followUp') to queue the message."
                )
            if isinstance(prompt, list):
                raise CommandError("message: a list cannot be queued; send one message")
            queued = {"message": command.get("message"), "images": command.get("images")}
            return await self.queue(queued, "steer" if behavior == "steer" else "follow_up")
        self._start(lambda agent: agent.prompt(prompt, images=images))
        return {"disposition": "started"}

    def _start(self, run: Callable[[Agent], Awaitable[None]]) -> None:
        """Start a run (a prompt, a continue) of the current agent in a task of the session."""
        if self._nursery is None:
            raise CommandError("the session is not running")
        done = trio.Event()
        scope = trio.CancelScope()
        self._run_done, self._run_scope = done, scope
        self._abort_requested = False
        self._nursery.start_soon(self._run, self.agent, run, scope, done)

    async def _approve(self, command: dict[str, Any]) -> Any:
        return await self._decide(command, approved=True)

    async def _deny(self, command: dict[str, Any]) -> Any:
        return await self._decide(command, approved=False)

    async def _decide(self, command: dict[str, Any], *, approved: bool) -> Any:
        """A decision about a tool call that waits (its ``tool_approval_request`` was sent);
        once none waits undecided and no run is active, the agent continues (its events
        follow, then ``agent_settled``)."""
        call_id, reason = command.get("toolCallId"), command.get("reason", "")
        if not isinstance(call_id, str):
            raise CommandError("toolCallId: required (the id of a tool call that waits)")
        if not isinstance(reason, str):
            raise CommandError(f"reason: expected a string, got {type(reason).__name__}")
        try:
            if approved:
                self.agent.approve(call_id)
            else:
                self.agent.deny(call_id, reason)
        except KeyError as exc:
            raise CommandError(str(exc.args[0])) from None
        if self.agent.state.pending_approvals or self.busy:
            return {"disposition": "decided"}
        self._start(lambda agent: agent.continue_())
        return {"disposition": "continued"}

    @staticmethod
    def _prompt_message(raw: Any) -> str | AgentMessage | list[AgentMessage]:
        """pi's text, or (pi-trio's addition) a message object or a list of them."""
        if raw is None:
            raise CommandError("message: required (a string, a message object or a list)")
        if not isinstance(raw, list):
            message = message_field(raw, "message")
            check_calls_answered([message], "message")
            return message
        if not raw:
            raise CommandError("message: an empty list; send at least one message")
        prompt: list[AgentMessage] = []
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                raise CommandError(f"message[{i}]: expected a message object")
            prompt.append(message_field(item, f"message[{i}]"))  # type: ignore[arg-type]
        check_calls_answered(prompt, "message")
        return prompt

    async def _run(
        self,
        agent: Agent,
        run: Callable[[Agent], Awaitable[None]],
        scope: trio.CancelScope,
        done: trio.Event,
    ) -> None:
        """The run's task. ``agent`` is the session's when it started: a session switch gives
        that session back (aborting the run) before this task ends, and it goes on with no
        other session's agent."""
        try:
            try:
                with scope:
                    await run(agent)
                    state = agent.state  # decisions sent while it ran: go on with them
                    while (
                        agent is self.agent
                        and state.awaiting_approval
                        and not state.pending_approvals
                    ):
                        await agent.continue_()
            except PiError as exc:
                await self.send({"type": "error", "error": f"{type(exc).__name__}: {exc}"})
        except trio.Cancelled:  # the command itself ends (Ctrl-C, a server closing)
            with trio.move_on_after(_ERROR_LINE_SECONDS, shield=True):  # clients wait for it
                await self.send({"type": "agent_settled", "aborted": True})
            raise
        else:
            switched = agent is not self.agent  # its session was given back: aborted then
            aborted = self._abort_requested or (switched and _ended_aborted(agent))
            await self.send({"type": "agent_settled", "aborted": aborted})
        finally:
            done.set()

    async def stop_run(self, agent: Agent | None = None) -> None:
        """Abort the current prompt (if any) and wait until it has settled; ``agent``: the
        one it runs on, when the session changed meanwhile (default: the current one)."""
        agent = self.agent if agent is None else agent
        if self.busy:
            self._abort_requested = True
        agent.abort()
        if self._run_scope is not None:
            self._run_scope.cancel()
        if self._run_done is not None:
            await self._run_done.wait()
        await agent.wait_for_idle()


AgentFactory = Callable[[], Agent]


def _ended_aborted(agent: Agent) -> bool:
    """Whether ``agent``'s last run ended aborted (a session switch gave its session back)."""
    last = agent.state.last_assistant_message
    return last is not None and last.stop_reason == "aborted"


async def run_stdio(
    make_agent: AgentFactory,
    *,
    store: str | None = None,
    session_id: str | None = None,
    model_given: bool = True,
) -> None:
    """``pi-trio rpc``: commands on stdin, responses and events on stdout.

    Without ``store`` the sessions live in memory for the process; with it they are durable
    sessions of that store, starting with ``session_id`` (a new one when None);
    ``model_given``: the command's model replaces a resumed session's own.

    Raises:
        SessionError: the store or the first session cannot be opened.
    """
    if store is None:
        await RpcSession(MemorySessions(make_agent), StdioLines()).run()
        return
    async with open_durable_sessions(
        store, session_id, make_agent, model_given=model_given
    ) as sessions:
        await RpcSession(sessions, StdioLines()).run()


async def serve_tcp_rpc(
    make_agent: AgentFactory,
    port: int,
    host: str = "127.0.0.1",
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """``pi-trio serve``: the same protocol over TCP; each connection has its own in-memory
    sessions (a fresh agent for each).

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
                session = RpcSession(MemorySessions(make_agent), lines)
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
