"""The sessions behind pi's RPC session commands (``new_session``, ``switch_session``, ...).

A :class:`SessionHost` holds the current session (its id and its agent) and makes or opens
others. :class:`MemorySessions` keeps every session of the process in memory (``pi-trio rpc``
without a store, and every ``pi-trio serve`` connection); :func:`open_durable_sessions` gives
one whose sessions live in a pi_trio session store (``pi-trio rpc --store PATH``), where
``switch_session``'s ``sessionPath`` names a session id of that store.

The shapes pi's RPC answers with that come from a transcript (``get_entries``'s session
entries, ``get_session_stats``'s stats) are built here too, from the transcript alone.
"""

from __future__ import annotations

import contextlib
import datetime
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import trio

from .._errors import PiError
from .._groups import plain_exception
from .._logging import cli_logger
from ..agent import Agent
from ..messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..providers import StreamFn
from ..wire import to_json
from ._agents import resume_with_model

__all__ = [
    "MemorySessions",
    "SessionError",
    "SessionHost",
    "last_assistant_text",
    "open_durable_sessions",
    "session_entries",
    "session_stats",
]


class SessionError(PiError):
    """A session command that cannot be carried out (an unknown session, say)."""


class SessionHost(Protocol):
    """Where an RPC connection's sessions live; ``agent`` is the current session's."""

    @property
    def session_id(self) -> str: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def scripted_stream(self) -> StreamFn | None:
        """The scripted model's stream function when the agents run it, else None."""
        ...

    async def new_session(self) -> None:
        """Make a fresh session (empty transcript) the current one; it keeps the current
        model, thinking level and queue modes. The caller has stopped any run first."""
        ...

    async def switch_session(self, ref: str) -> None:
        """Make the session ``ref`` names the current one.

        Raises:
            SessionError: no such session (nothing changes).
        """
        ...


def _new_id() -> str:
    return str(uuid.uuid4())


def _carry_settings(old: Agent, new: Agent) -> None:
    new.state.model = old.state.model
    new.state.thinking_level = old.state.thinking_level
    new.stream_fn = old.stream_fn
    new.steering_mode = old.steering_mode
    new.follow_up_mode = old.follow_up_mode


class MemorySessions:
    """Sessions that live as long as the process (or the TCP connection): each id keeps its
    agent, so ``switch_session`` back to one finds its transcript as it was."""

    def __init__(self, make_agent: Callable[[], Agent], first: Agent | None = None) -> None:
        """``make_agent`` makes each new session's agent; ``first`` is the first session's
        (a new one when None)."""
        self._make_agent = make_agent
        agent = first if first is not None else make_agent()
        self._session_id = _new_id()
        self._agents = {self._session_id: agent}
        self._scripted = agent.stream_fn

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def agent(self) -> Agent:
        return self._agents[self._session_id]

    @property
    def scripted_stream(self) -> StreamFn | None:
        return self._scripted

    async def new_session(self) -> None:
        agent = self._make_agent()
        _carry_settings(self.agent, agent)
        self._session_id = _new_id()
        self._agents[self._session_id] = agent

    async def switch_session(self, ref: str) -> None:
        if ref not in self._agents:
            known = ", ".join(self._agents)
            raise SessionError(f"no session {ref!r} in this process; its sessions: {known}")
        self._session_id = ref


class DurableSessions:
    """Sessions of a pi_trio session store; one is open (held) at a time.

    Each open session is held by its own task of the nursery :func:`open_durable_sessions`
    runs (``store.open_agent``'s block must begin and end in one task, whichever task sends
    the commands); giving a session back ends its task.
    """

    def __init__(
        self,
        store: Any,
        make_agent: Callable[[], Agent],
        nursery: trio.Nursery,
        *,
        model_given: bool = True,
    ) -> None:
        self._store = store
        self._make_agent = make_agent
        self._model_given = model_given  # --model: it replaces a resumed session's model
        self._nursery = nursery
        self._release: Callable[[], Awaitable[None]] | None = None
        self._session_id = ""
        self._agent: Agent | None = None
        self._scripted: StreamFn | None = None

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def agent(self) -> Agent:
        assert self._agent is not None, "no session is open"
        return self._agent

    @property
    def scripted_stream(self) -> StreamFn | None:
        return self._scripted

    async def open(self, session_id: str, *, create: bool, like: Agent | None = None) -> None:
        """Open ``session_id``, then give the previous one back: a failure leaves the
        current session current. Cancelled while opening, the new session's task ends (its
        block gives back whatever it took) and the current session stays current.

        Raises:
            SessionError: the session cannot be opened (unknown, held elsewhere, ...).
        """
        template = self._make_agent()
        if self._agent is None:
            self._scripted = template.stream_fn
        if like is not None:
            _carry_settings(like, template)
        try:
            agent, release = await self._nursery.start(self._hold, session_id, template, create)
        except (PiError, ValueError) as exc:  # ValueError: an id no store keeps
            raise SessionError(str(exc)) from None
        if like is None:
            resume_with_model(agent, template, self._model_given)
        old, self._release = self._release, release
        self._session_id, self._agent = session_id, agent
        if old is not None:
            await old()

    async def _hold(
        self,
        session_id: str,
        template: Agent,
        create: bool,
        *,
        task_status: trio.TaskStatus[tuple[Agent, Callable[[], Awaitable[None]]]],
    ) -> None:
        done, closed = trio.Event(), trio.Event()

        async def release() -> None:
            done.set()
            await closed.wait()

        try:
            opened = self._store.open_agent(
                session_id,
                initial_state=template.state,
                create=create,
                stream_fn=template.stream_fn,
                steering_mode=template.steering_mode,
                follow_up_mode=template.follow_up_mode,
            )
            async with opened as agent:
                task_status.started((agent, release))
                await done.wait()
        finally:
            closed.set()

    async def new_session(self) -> None:
        await self.open(_new_id(), create=True, like=self._agent)

    async def switch_session(self, ref: str) -> None:
        await self.open(ref, create=False)

    async def aclose(self) -> None:
        """Give the open session back (its task ends)."""
        if self._release is not None:
            release, self._release = self._release, None
            await release()


@contextlib.asynccontextmanager
async def open_durable_sessions(
    store_path: str,
    session_id: str | None,
    make_agent: Callable[[], Agent],
    *,
    model_given: bool = True,
) -> AsyncIterator[DurableSessions]:
    """Open the store at ``store_path`` and session ``session_id`` in it (a new id when None).
    ``model_given``: the command's model replaces a resumed session's logged one (else the
    session keeps its model; see :func:`resume_with_model`).

    At the block's end (or on cancellation) the open session is given back as
    ``store.open_agent``'s block gives it back (a run still going is aborted), and the store
    is closed.

    Raises:
        SessionError: the store or the first session cannot be opened, or the store failed
            while a session was held (a lost lease, say); never an exception group.
    """
    from ..sessions import open_session_store

    try:
        async with open_session_store(store_path) as store, trio.open_nursery() as nursery:
            sessions = DurableSessions(store, make_agent, nursery, model_given=model_given)
            try:
                await sessions.open(session_id or _new_id(), create=True)
                yield sessions
            finally:
                with trio.CancelScope(shield=True):
                    await sessions.aclose()
    except BaseExceptionGroup as group:
        leaf = plain_exception(group, cli_logger)
        if isinstance(leaf, PiError) and not isinstance(leaf, SessionError):
            raise SessionError(str(leaf)) from None
        raise leaf from None
    except PiError as exc:
        if isinstance(exc, SessionError):
            raise
        raise SessionError(str(exc)) from None


# --- shapes built from a transcript --------------------------------------------------------


_ISO_MS = range(-62135596800000, 253402300800000)  # 0001-01-01 to 9999-12-31T23:59:59.999Z


def _iso(ms: int) -> str:
    """``new Date(ms).toISOString()``; a time outside years 1 to 9999 (microseconds taken for
    milliseconds, say) is the epoch's."""
    if ms not in _ISO_MS:
        ms = 0
    moment = _EPOCH + datetime.timedelta(milliseconds=ms)  # exact: no float on the way
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def entry_id(index: int) -> str:
    """The id of the transcript's ``index``-th message as a session entry (8 hex digits, like
    pi's; stable while the transcript only grows)."""
    return f"{index:08x}"


def session_entries(messages: list[AgentMessage]) -> list[dict[str, Any]]:
    """pi's ``SessionMessageEntry`` for every message of the transcript, as one branch."""
    entries = []
    for index, message in enumerate(messages):
        data = to_json(message)
        when = data.get("timestamp")
        entries.append(
            {
                "type": "message",
                "id": entry_id(index),
                "parentId": entry_id(index - 1) if index else None,
                "timestamp": _iso(when if isinstance(when, int) else 0),
                "message": data,
            }
        )
    return entries


def session_stats(messages: list[AgentMessage], session_id: str) -> dict[str, Any]:
    """pi's ``SessionStats`` of the transcript (no ``sessionFile``, no ``contextUsage``)."""
    counts = {"user": 0, "assistant": 0, "toolResult": 0}
    tool_calls = 0
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for message in messages:
        if isinstance(message, UserMessage):
            counts["user"] += 1
        elif isinstance(message, ToolResultMessage):
            counts["toolResult"] += 1
        elif isinstance(message, AssistantMessage):
            counts["assistant"] += 1
            tool_calls += sum(isinstance(block, ToolCall) for block in message.content)
            usage = message.usage
            tokens["input"] += usage.input
            tokens["output"] += usage.output
            tokens["cacheRead"] += usage.cache_read
            tokens["cacheWrite"] += usage.cache_write
            cost += usage.cost.total
    return {
        "sessionId": session_id,
        "userMessages": counts["user"],
        "assistantMessages": counts["assistant"],
        "toolCalls": tool_calls,
        "toolResults": counts["toolResult"],
        "totalMessages": len(messages),
        "tokens": {**tokens, "total": sum(tokens.values())},
        "cost": cost,
    }


def last_assistant_text(messages: list[AgentMessage]) -> str | None:
    """The text of the last reply, as pi's ``getLastAssistantText``: an assistant message that
    ended normally, or one with text; None when there is none or it has no text."""
    for message in reversed(messages):
        if not isinstance(message, AssistantMessage):
            continue
        texts = [block.text for block in message.content if isinstance(block, TextContent)]
        if message.stop_reason != "stop" and not any(t.strip() for t in texts):
            continue
        return "".join(texts).strip() or None
    return None
