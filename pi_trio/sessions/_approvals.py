"""Deciding about waiting tool calls from the store: any process, the session held or not.

A call that waits for a person's decision is in its session's log (an ``approval`` entry and no
result), so a store can list them across sessions and take a decision without the agent:

- the session is open in this process (``store.open_agent``): the agent decides
  (``agent.approve``/``deny``) and the decision is committed before this returns;
- PostgreSQL: the decision goes to the session's inbox, which its holder moves into its log and
  its agent at its next lease renewal (or, free, the next holder when it opens the session; a
  ``serve_sessions`` worker claims it and continues it once every waiting call is decided);
- SQLite, the session free: the decision is appended to its log under a short lease of its
  own; held by another process: :class:`pt.SessionBusyError` (SQLite has no inbox: decide
  through that process).
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any

import trio

from .._callbacks import exception_line
from .._errors import SessionBusyError, SessionLogError, SessionNotFoundError, SessionStoreError
from .._logging import sessions_logger
from ..messages import ToolCall, now_ms
from ..tools import ToolDecision
from ._backend import Lease, SessionBackend, as_leased
from ._entries import FORMAT_VERSION, dumps
from ._holders import new_holder
from ._repair import SessionImage, decision_of, restore, waiting_calls

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["decide_in_store", "undecided_calls"]


async def _undecided(
    backend: SessionBackend, session_id: str
) -> tuple[SessionImage, list[ToolCall]]:
    """The session's image and its calls waiting for a decision (decisions still in its inbox
    count as made)."""
    image = restore(session_id, await backend.load_rows(session_id))
    decided = set(image.decisions)
    leased = as_leased(backend)
    if leased is not None:
        for _ident, kind, text in await leased.inbox(session_id):
            if kind == "decision":
                decided.add(_decided_call(text))
    calls = [call for call in waiting_calls(image, image.messages) if call.id not in decided]
    return image, calls


def _decided_call(text: str) -> Any:
    """The call id a decision row of the inbox names (None for a row that names none: its
    holder logs it as ignored)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data.get("toolCallId") if isinstance(data, dict) else None


async def undecided_calls(
    backend: SessionBackend, session_ids: list[str], *, skip_unreadable: bool = False
) -> list[tuple[str, ToolCall]]:
    """``(session_id, call)`` for every call of those sessions that waits for a decision.

    Reads each session's log (in the backend's worker thread); cancellation stops between
    sessions, leaving nothing behind.

    Args:
        skip_unreadable: a session whose log cannot be read is logged (a warning) and left
            out, rather than failing the whole listing (a store-wide one).

    Raises:
        pt.SessionLogError: a log cannot be read (unless ``skip_unreadable``).
    """
    found: list[tuple[str, ToolCall]] = []
    for session_id in session_ids:
        try:
            _, calls = await _undecided(backend, session_id)
        except SessionLogError as exc:
            if not skip_unreadable or isinstance(exc, SessionStoreError):
                raise
            sessions_logger.warning(
                "session %r: left out of the pending approvals: %s",
                session_id,
                exception_line(exc),
            )
            continue
        found.extend((session_id, call) for call in calls)
    return found


def _check_waiting(session_id: str, tool_call_id: str, calls: list[ToolCall]) -> None:
    if not any(call.id == tool_call_id for call in calls):
        ids = ", ".join(repr(call.id) for call in calls) or "none"
        raise KeyError(
            f"session {session_id!r}: no tool call {tool_call_id!r} waits for a decision "
            f"(it was decided already, answered, or never asked; waiting: {ids})"
        )


async def decide_in_store(
    backend: SessionBackend,
    open_agents: dict[str, Agent],
    session_id: str,
    tool_call_id: str,
    decision: ToolDecision,
) -> None:
    """Take ``decision`` about a waiting call (see the module docstring for where it goes).

    Raises:
        KeyError: the call does not wait for a decision in that session (names what waits).
        pt.SessionBusyError: SQLite, and another process holds the session.
        pt.SessionNotFoundError: SQLite, and the store has no such session.

    Cancellation: the decision is taken or not; a commit in flight completes first.
    """
    agent = open_agents.get(session_id)
    if agent is not None:
        if decision.approved:
            agent.approve(tool_call_id)
        else:
            agent.deny(tool_call_id, decision.reason)
        if agent.recorder is not None:
            await agent.recorder.flush()
        return
    data: dict[str, Any] = {
        "toolCallId": tool_call_id,
        "approved": decision.approved,
        "reason": decision.reason,
    }
    leased = as_leased(backend)
    if leased is not None:
        _, calls = await _undecided(backend, session_id)
        _check_waiting(session_id, tool_call_id, calls)
        await leased.enqueue(session_id, "decision", dumps(data), now_ms())
        return
    if not await backend.load_rows(session_id):  # acquire() would create it
        raise SessionNotFoundError(
            f"no session {session_id!r} in {backend.description}", session_id=session_id
        )
    holder = new_holder("decide-" + secrets.token_hex(4))
    got = await backend.acquire(session_id, holder)
    if not isinstance(got, Lease):
        raise SessionBusyError(
            f"session {session_id!r} is open in another process (held by {got}): decide "
            "there (agent.approve / agent.deny), or once it is closed",
            session_id=session_id,
            holder=got,
        )
    try:
        image, calls = await _undecided(backend, session_id)
        _check_waiting(session_id, tool_call_id, calls)
        decision_of(data)  # the entry reads back
        row = (image.last_seq + 1, "decision", dumps(data), now_ms(), FORMAT_VERSION)
        await backend.append(got, [row])
    finally:
        with trio.CancelScope(shield=True):  # a commit in flight completes first
            await backend.release(got, idle=True)
