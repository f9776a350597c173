"""``SessionStore`` and ``open_session_store``: durable agents over a session backend.

``store.open_agent(id, ...)`` takes the session's lease, folds its log into an agent
(transcript, settings, both queues), repairs an interrupted tail, and wires a
:class:`SessionRecorder` into the agent so that its run is logged as it goes. Everything here is
backend-independent: SQLite (the embedded default) and PostgreSQL (:mod:`._postgres`, shared by
many processes) plug in behind the same :class:`SessionBackend` protocol.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import attrs
import trio

from .._callbacks import exception_line
from .._errors import SessionBusyError, SessionLogError, SessionNotFoundError, SessionStoreError
from .._groups import plain_exception
from .._logging import sessions_logger
from ..agent import Agent, AgentState
from ..messages import (
    AgentMessage,
    TextContent,
    ToolCall,
    UserMessage,
    checked_message,
    now_ms,
)
from ..models import Model
from ..tools import ToolDecision, last_output
from ..wire import from_json, to_json
from ._approvals import decide_in_store, undecided_calls
from ._backend import (
    MAX_NEW_ID_BYTES,
    Lease,
    SessionBackend,
    SessionInfo,
    as_leased,
    check_session_id,
    long_id_error,
    session_exists,
)
from ._entries import SessionEntry, check_loggable, check_row, dumps, entry_error, parse_data
from ._holders import new_holder
from ._intents import durable_before_tool_call
from ._keeper import LeaseKeeper, pull_inbox
from ._pi_files import export_pi_session, import_pi_session
from ._recorder import SessionRecorder
from ._repair import SessionImage, restore
from ._resume import repair_tail, restore_approvals

__all__ = ["SessionStore"]


class SessionStore:
    """Durable sessions in one store (see :func:`open_session_store`)."""

    def __init__(self, backend: SessionBackend) -> None:
        self.backend = backend
        self._open: dict[str, Agent] = {}  # the agents of this store's open_agent blocks

    def __repr__(self) -> str:
        return f"<SessionStore {self.backend.description}>"

    async def load(self, session_id: str) -> list[SessionEntry]:
        """The session's log, every entry in ``seq`` order (empty for an unknown id).

        Reads in the store's thread; a cancelled call returns nothing but the read completes.

        Raises:
            pt.SessionLogError: an entry is of an unknown kind, a newer format, or bad JSON.
        """
        check_session_id(session_id)
        rows = await self.backend.load_rows(session_id)
        entries = []
        for seq, kind, text, when, epoch, version in rows:
            check_row(session_id, seq, kind, version)
            data = parse_data(session_id, seq, text)
            entries.append(SessionEntry(session_id, seq, kind, data, when, epoch, version))
        return entries

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session of the store, oldest first (a read in the store's thread; cancelling
        it before it is queued stops it, after that the read completes first)."""
        return await self.backend.list_sessions()

    async def delete(self, session_id: str) -> bool:
        """Delete a session and its log; False when there was no such session.

        One transaction: once queued, a cancellation lets it commit (or roll back) first.

        Raises:
            pt.SessionBusyError: the session is open (held) somewhere.
        """
        check_session_id(session_id)
        return await self.backend.delete(session_id)

    async def import_pi_session(
        self, path: str | os.PathLike[str], session_id: str | None = None
    ) -> str:
        """Make a session of a pi 1.6 session file's current branch; returns its id.

        The transcript is exactly the context pi's ``buildSessionContext`` derives from the
        file (its last entry's branch; compaction and branch summaries, extensions' messages
        and context edits honoured); the branch's model and thinking level are kept. The file
        is read and encoded in a worker thread; the log is written in one transaction.
        Cancellation: while the file is read, the read completes and nothing is written; after
        that, the session is either whole or not there.

        Args:
            path: a pi-coding-agent session file (JSONL, version 3).
            session_id: the new session's id (default: the file's own session id).

        Raises:
            pt.PiSessionFileError: not a pi session file of version 3, or a line pi_trio
                cannot take (the error names the file and line).
            pt.SessionExistsError: the store has a session of that id already.
            OSError: the file cannot be read.
        """
        return await import_pi_session(self.backend, path, session_id)

    async def export_pi_session(
        self,
        session_id: str,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        cwd: str | None = None,
    ) -> None:
        """Write the session as a pi 1.6 session file (version 3) that pi opens, with the
        session's transcript as its context (and its model and thinking level).

        Written beside ``path`` and moved into place (in a worker thread): a reader never
        sees part of it. Cancellation lets the write complete (or fail) first.

        Args:
            session_id: the session (its log as it is; opening it repairs an interrupted tail).
            path: where to write the file.
            overwrite: replace an existing file (by default one is never replaced).
            cwd: the header's working directory (default: this process's).

        Raises:
            pt.SessionNotFoundError: the store has no such session.
            FileExistsError: ``path`` exists and ``overwrite`` is False.
        """
        await export_pi_session(self.backend, session_id, path, overwrite=overwrite, cwd=cwd)

    @asynccontextmanager
    async def open_agent(
        self,
        session_id: str,
        *,
        initial_state: AgentState | None = None,
        wait: bool = False,
        create: bool = True,
        **agent_options: Any,
    ) -> AsyncIterator[Agent]:
        """``async with store.open_agent(id, initial_state=..., **options) as agent``.

        A new id starts a session from ``initial_state``. An existing id comes back from its
        log: the transcript, the model, system prompt and thinking level, and both queues; a
        tail a crash interrupted is repaired (tool calls without a result get one: re-run for
        ``replay="safe"`` tools, else an error result saying "not_started" or
        "outcome_unknown"; an open run is closed in pi's aborted shape). Tools, hooks and the
        stream function are code: pass them again (``initial_state.tools``, ``agent_options``).
        When ``initial_state.model`` is the logged model (same provider and id), that object is
        used, headers and all; model headers are never stored.

        While the block is open this holder alone drives the session. The block's end commits
        what is pending and gives the session back. Runs must end inside the block (one still
        active there is aborted). On PostgreSQL the holder's lease expires unless renewed: a
        task of the block renews it (and moves messages ``store.enqueue``d meanwhile into the
        agent's queues); when it is lost, the block's run is cancelled and the block raises
        :class:`pt.SessionBusyError`, with nothing more written.

        Args:
            session_id: the session's id: text without NUL (a new one's at most 1,024 bytes).
            initial_state: the new session's state; for an existing one, its tools (and model
                object).
            wait: when another holder has the session, wait for it instead of raising.
            create: False: only open a session the store has (a mistyped id raises
                :class:`pt.SessionNotFoundError` instead of starting a new session).
            agent_options: :class:`pt.Agent`'s keyword arguments (not ``recorder``);
                ``session_id`` (the provider's cache key) defaults to the session's id.

        Raises:
            pt.SessionBusyError: another holder has the session (and ``wait`` is False), or
                this holder lost it during the block (its lease expired, or a commit found it
                taken over); an exception the block itself raised comes out instead.
            pt.SessionLogError: the log cannot be read; nothing is changed.
            pt.SessionNotFoundError: ``create=False`` and no session has that id.
            ValueError: an id no store keeps (see ``session_id``).

        Cancellation while opening gives the session back; a commit in flight completes first.
        """
        if "recorder" in agent_options:
            raise TypeError("open_agent() makes the agent's recorder: do not pass recorder=")
        if not create and not await self._exists(session_id):
            raise SessionNotFoundError(
                f"no session {session_id!r} in {self.backend.description} (create=False)",
                session_id=session_id,
            )
        lease, taken = await self._acquire(session_id, wait)
        async with self.open_leased(lease, taken, initial_state, agent_options) as agent:
            yield agent

    async def _exists(self, session_id: str) -> bool:
        """Whether the store has the session: a log, or a row (queued input, say)."""
        check_session_id(session_id)
        return await session_exists(self.backend, session_id)

    @asynccontextmanager
    async def open_leased(
        self,
        lease: Lease,
        taken: float,
        initial_state: AgentState | None,
        agent_options: dict[str, Any],
        *,
        set_aside: bool = False,
    ) -> AsyncIterator[Agent]:
        """:meth:`open_agent` on a lease already taken (at Trio time ``taken``), which it
        gives back at the end. For :func:`serve_sessions`; see :meth:`open_agent`.
        ``set_aside``: a session that fails (an exception that is not the store's or a lost
        lease) is given back not pending, whatever it has queued, until new input comes: a
        worker would otherwise claim it again at once and fail the same way."""
        session_id = lease.session_id
        recorder: SessionRecorder | None = None
        agent: Agent | None = None
        try:
            image = restore(session_id, await self.backend.load_rows(session_id))
            state = attrs.evolve(initial_state) if initial_state is not None else AgentState()
            if image.last_seq == 0:
                recorder = SessionRecorder(self.backend, lease, next_seq=1)
                keeper = LeaseKeeper(self.backend, lease, taken, None, recorder)
                recorder.note_settings(state)
                if state.messages:
                    recorder.note_transcript(state.messages)
            else:
                recorder = SessionRecorder(
                    self.backend,
                    lease,
                    next_seq=image.last_seq + 1,
                    known=image.messages,
                    settings=image.settings,
                )
                _apply_settings(state, image, session_id)
                keeper = LeaseKeeper(self.backend, lease, taken, None, recorder)
                async with keeper.kept():  # a replay="safe" re-run may outlast the lease
                    state.messages = await repair_tail(image, state, recorder)
                recorder.note_settings(state)
            options = dict(agent_options)
            user_hook = options.pop("before_tool_call", None)
            options.setdefault("session_id", session_id)
            agent = Agent(
                state,
                before_tool_call=durable_before_tool_call(recorder, user_hook),
                **options,
            )
            for seq, (queue, message) in image.queued.items():
                (agent.steer if queue == "steer" else agent.follow_up)(message)
                recorder.adopt_queued(seq, queue, message)
            restore_approvals(image, agent.state)  # the calls that still wait for a person
            # the last run's structured output, from the log's last tool results
            agent.state.output = last_output(agent.state.messages, agent.settings.output_tool)
            recorder.agent = agent
            self._open[session_id] = agent
            agent.recorder = recorder
            await recorder.flush()
            keeper.agent = agent  # from now on it also moves the inbox in
            await pull_inbox(self.backend, agent, recorder)
        except BaseException as exc:
            self._open.pop(session_id, None)
            if recorder is not None:
                recorder.close()
            # an unreadable log is not worth a worker's retrying until new input comes; a store
            # that failed (SessionStoreError) is: the session stays pending
            unreadable = isinstance(exc, SessionLogError) and not isinstance(exc, SessionStoreError)
            give_up = unreadable or (set_aside and _failed_here(exc))
            await self._give_back(lease, exc, idle=False, give_up=give_up)
            raise
        ending: BaseException | None = None  # what ended the block, if anything did
        try:
            async with trio.open_nursery() as nursery:
                if keeper.needed:
                    nursery.start_soon(keeper.run)
                try:
                    yield agent
                except BaseException:
                    # leaving by an exception (a cancellation, say): keep what was noted
                    agent.abort()
                    with trio.move_on_after(agent.close_timeout, shield=True):
                        if not recorder.lost:
                            try:
                                await recorder.flush()
                            except Exception:
                                sessions_logger.exception(
                                    "session %r: final commit failed", session_id
                                )
                    raise
                else:
                    if agent.is_running:
                        agent.abort()
                        await agent.wait_for_idle()
                    if recorder.failure is not None:  # a commit found the lease lost
                        raise SessionBusyError(str(recorder.failure), session_id=session_id)
                    await recorder.flush()
                finally:
                    nursery.cancel_scope.cancel()  # the keeper ends with the block
        except BaseExceptionGroup as group:
            ending = plain_exception(group, sessions_logger)
            raise ending from ending.__cause__  # the group goes; its exception's own cause stays
        except BaseException as exc:
            ending = exc
            raise
        finally:
            recorder.close()
            self._open.pop(session_id, None)
            # a session whose calls wait for a person has nothing a worker could do yet; one
            # whose calls are all decided and not yet run has (a worker continues it); one the
            # store failed stays pending (its next holder closes what that failure cut short)
            state = agent.state
            idle = bool(state.pending_approvals) or not (
                agent.has_queued_messages() or state.awaiting_approval
            )
            idle = idle and not isinstance(ending, SessionStoreError)
            # input this holder moved in after its claim is new: not given up on with the rest
            moved_new = max(recorder.inbox_seen, default=0) > lease.inbox_seen
            give_up = set_aside and _failed_here(ending) and not moved_new
            await self._give_back(lease, ending, idle=idle, give_up=give_up)

    async def _give_back(
        self, lease: Lease, ending: BaseException | None, *, idle: bool, give_up: bool = False
    ) -> None:
        """Release ``lease`` (shielded: a commit in flight completes). When the block is ending
        with an exception (``ending``), a release that fails too (the store is down: how a lease
        gets lost) is one warning, and ``ending`` stays the error the caller sees; otherwise
        the failure is raised."""
        with trio.CancelScope(shield=True):
            try:
                await self.backend.release(lease, idle=idle, give_up=give_up)
            except Exception as exc:
                if ending is None:
                    raise
                after = (
                    f"its lease runs out by itself (within {lease.ttl:g} s)"
                    if lease.ttl is not None
                    else "this process may open it again, others once this process ends"
                )
                sessions_logger.warning(
                    "session %r: could not give it back either (%s); %s",
                    lease.session_id,
                    exception_line(exc),
                    after,
                )

    async def pending_approvals(self, session_id: str | None = None) -> list[tuple[str, ToolCall]]:
        """The tool calls waiting for a person's decision, ``(session_id, call)``, in every
        session of the store (or in ``session_id``'s), in the order they were requested.

        It reads each session's log; cancellation leaves nothing behind.

        Raises:
            pt.SessionNotFoundError: ``session_id`` names no session of the store (a typo
                would otherwise look like "nothing waits").
            pt.SessionLogError: that session's log cannot be read (in a store-wide listing,
                such a session is left out with a warning instead).
        """
        if session_id is not None:
            if not await self._exists(session_id):
                raise SessionNotFoundError(
                    f"no session {session_id!r} in {self.backend.description}",
                    session_id=session_id,
                )
            ids = [session_id]
        else:
            ids = [info.session_id for info in await self.backend.list_sessions()]
        return await undecided_calls(self.backend, ids, skip_unreadable=session_id is None)

    async def approve(self, session_id: str, tool_call_id: str) -> None:
        """Approve a waiting tool call from any process, the session held or not (see
        :mod:`pi_trio.sessions._approvals` for the ways a decision travels); durable when this
        returns. The session's next ``continue_()`` (a ``serve_sessions`` worker's, once every
        waiting call is decided) runs it.

        Raises:
            KeyError: the call does not wait for a decision in that session.
            pt.SessionBusyError: a SQLite store, and another process holds the session.
            pt.SessionNotFoundError: the store has no such session (deleted, say).
        """
        check_session_id(session_id)
        await decide_in_store(
            self.backend, self._open, session_id, tool_call_id, ToolDecision(True)
        )

    async def deny(self, session_id: str, tool_call_id: str, reason: str = "") -> None:
        """Deny a waiting tool call from any process (as :meth:`approve`): it gets an error
        result saying it was denied, and ``reason``, which the model reads.

        Raises:
            KeyError, pt.SessionBusyError, pt.SessionNotFoundError: as :meth:`approve`.
            TypeError: ``reason`` is not a string.
        """
        check_session_id(session_id)
        await decide_in_store(
            self.backend, self._open, session_id, tool_call_id, ToolDecision(False, reason)
        )

    async def enqueue(
        self,
        session_id: str,
        message: AgentMessage | str,
        *,
        kind: Literal["steer", "follow_up"] = "follow_up",
    ) -> int:
        """Queue ``message`` for the session from any process: durable when this returns.

        It goes to the session's inbox (the session is created when it is new); its holder
        moves it into the log as a ``queued`` entry and into the agent's queue in one
        transaction, at the latest at its next lease renewal or when :func:`serve_sessions`
        runs it (which claims sessions with queued input). Returns the inbox row's id (the
        ``queued`` entry carries it as ``inbox``).

        Raises:
            ValueError: ``kind`` is not "steer" or "follow_up".
            TypeError: ``message`` is not a text or a message the log can give back (an
                application's own type must be registered with
                ``pi_trio.wire.register_message_type``); or this store's backend has no
                inbox (SQLite, today).

        One transaction: once queued, a cancellation lets it commit first.
        """
        if kind not in ("steer", "follow_up"):
            raise ValueError(f"kind must be 'steer' or 'follow_up', not {kind!r}")
        backend = as_leased(self.backend)
        if backend is None:
            raise TypeError(
                f"store.enqueue() needs a store with an inbox (PostgreSQL); "
                f"{self.backend.description} has none: use agent.steer()/follow_up() there"
            )
        await self._check_new_id(session_id)
        if isinstance(message, str):
            item: AgentMessage = UserMessage([TextContent(message)])
        else:
            item = checked_message(message, "enqueue()'s message")
            check_loggable(item)
        return await backend.enqueue(session_id, kind, dumps(to_json(item)), now_ms())

    async def _check_new_id(self, session_id: str) -> None:
        """The id checks; a long one only passes for a session made before the limit."""
        if check_session_id(session_id) > MAX_NEW_ID_BYTES and not await self._exists(session_id):
            raise long_id_error(session_id)

    async def _acquire(self, session_id: str, wait: bool) -> tuple[Lease, float]:
        """The lease, and the Trio time just before the request that took it (an expiring
        lease's local deadline counts from there)."""
        await self._check_new_id(session_id)
        holder = new_holder(secrets.token_hex(4))
        delay = 0.01
        while True:
            taken = trio.current_time()
            got = await self.backend.acquire(session_id, holder)
            if isinstance(got, Lease):
                return got, taken
            if not wait:
                raise SessionBusyError(
                    f"session {session_id!r} is open elsewhere (held by {got}); close it there "
                    "first, or pass wait=True to wait for it",
                    session_id=session_id,
                    holder=got,
                )
            await trio.sleep(delay)
            delay = min(delay * 2, 0.5)


def _failed_here(exc: BaseException | None) -> bool:
    """Whether ``exc`` is the session's own failure, not the store's, a lost lease's or a
    cancellation's (which another holder or a later try may get past)."""
    return isinstance(exc, Exception) and not isinstance(exc, SessionStoreError | SessionBusyError)


def _apply_settings(state: AgentState, image: SessionImage, session_id: str) -> None:
    settings = image.settings
    if settings is None:
        return
    try:
        logged: Model = from_json(settings["model"], Model)
        state.system_prompt = settings["systemPrompt"]
        state.thinking_level = settings["thinkingLevel"]
    except Exception as exc:
        raise entry_error(session_id, None, f"unreadable state entry ({exc})") from None
    given = state.model
    if not (given.provider == logged.provider and given.id == logged.id):
        state.model = logged
