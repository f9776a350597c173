"""``LeaseKeeper``: renews an expiring lease from inside its ``open_agent`` block, and moves the
session's inbox (``store.enqueue``) into the agent's queues.

It runs in a nursery the block owns, so it never outlives the block. Every ``lease_ttl / 3``
seconds it renews the lease (a renewal that fails for a transient reason is retried soon); a
watchdog ends the block with :class:`pt.SessionBusyError` when no renewal succeeded before the
lease's local deadline (a margin before the server's expiry, measured from before the request
that took or last renewed it), or at once when a renewal finds the lease lost. It first marks the
recorder lost, so nothing more is written; the server refuses an expired lease's appends anyway,
so a holder paused past its expiry (a partition, a stopped process) cannot write either.

After each renewal a task of its own moves the inbox (a slow commit of what it moved does not
hold up the renewals); a commit of moved rows that failed is tried again after the next one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from .._callbacks import exception_line
from .._errors import SessionBusyError, WireFormatError
from .._groups import plain_exception
from .._logging import sessions_logger
from ..messages import AgentMessage
from ..wire import from_json
from ._backend import Lease, SessionBackend, as_leased
from ._repair import decision_of

if TYPE_CHECKING:
    from ..agent import Agent
    from ._recorder import SessionRecorder

__all__ = ["LeaseKeeper", "pull_inbox"]


async def pull_inbox(backend: SessionBackend, agent: Agent, recorder: SessionRecorder) -> int:
    """Move the session's inbox rows into the agent's queues and the log (one commit that also
    deletes them); the number moved. Rows this holder moved already (the recorder knows them)
    are skipped, even when a read raced with the commit that deleted them; a commit of moved
    rows that failed is tried again here, so an idle session's inbox empties too."""
    leased = as_leased(backend)
    if leased is None or recorder.lost:  # SQLite has no inbox
        return 0
    rows = await leased.inbox(recorder.session_id)
    moved = 0
    seen = recorder.inbox_seen
    for ident, kind, text in rows:
        if ident in seen:
            continue
        seen.add(ident)
        recorder.from_inbox = ident
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:  # 5,000 digits, 3,000 levels deep
            _ignore(recorder, ident, kind, text, f"not JSON this process reads ({exc})")
        else:
            if kind == "decision":
                _decide(agent, recorder, ident, data)
            else:
                _queue(agent, recorder, ident, kind, data)
        finally:
            recorder.from_inbox = None
        moved += 1
    if moved or recorder.inbox_pending:  # pending: the commit that moved rows failed
        await recorder.flush()
    return moved


def _queue(agent: Agent, recorder: SessionRecorder, ident: int, kind: str, data: Any) -> None:
    """Queue a ``store.enqueue()`` row. One this process cannot read (a message type that
    the enqueuing process registered and this one did not) is logged as ``inbox_ignored``,
    its JSON kept, and its row deleted with the commit: it would otherwise hold up every later
    message of the session."""
    try:
        message: AgentMessage = from_json(data, AgentMessage)
    except (WireFormatError, RecursionError) as exc:
        _ignore(recorder, ident, kind, data, f"not a message this process reads ({exc})")
        return
    (agent.steer if kind == "steer" else agent.follow_up)(message)


def _ignore(recorder: SessionRecorder, ident: int, kind: str, data: Any, why: str) -> None:
    """Log an inbox row as ``inbox_ignored`` (its data kept: the JSON, or the text that is
    not JSON) and leave it to the commit to delete: it would otherwise hold up every later
    message of the session."""
    sessions_logger.warning(
        "session %r: inbox row %d is %s; it is logged as inbox_ignored and deleted",
        recorder.session_id,
        ident,
        why,
    )
    recorder.note("inbox_ignored", {"inbox": ident, "row": kind, "data": data, "why": why})


def _decide(agent: Agent, recorder: SessionRecorder, ident: int, data: Any) -> None:
    """Apply a ``store.approve()``/``deny()`` row. One about a call that no longer waits (it
    was decided here meanwhile, or an abort answered it) is logged as such, and its row
    deleted with the commit, so it is not tried again."""
    try:
        decision = decision_of(data)
        agent.state.decide(data["toolCallId"], decision)
    except (KeyError, TypeError) as exc:
        sessions_logger.warning(
            "session %r: a decision from the store was not applied (%s)",
            recorder.session_id,
            exception_line(exc),
        )
        logged = data if isinstance(data, dict) else {"data": data}  # not a decision at all
        recorder.note("decision", {**logged, "inbox": ident, "ignored": True})
        return
    recorder.decided(data["toolCallId"], decision)


class LeaseKeeper:
    """Keeps one lease alive (see the module docstring); ``needed`` is False for a lease that
    does not expire (SQLite)."""

    def __init__(
        self,
        backend: SessionBackend,
        lease: Lease,
        taken: float,
        agent: Agent | None,
        recorder: SessionRecorder,
    ) -> None:
        self.backend = backend
        self.lease = lease
        self.agent = agent
        self.recorder = recorder
        self.needed = lease.ttl is not None
        ttl = lease.ttl or 0.0
        self.interval = ttl / 3
        self.margin = min(ttl / 6, 2.0)
        self.deadline = taken + ttl
        self._pull_due = trio.Event()  # set by a renewal: time to move the inbox

    async def run(self) -> None:
        """Renew until cancelled; raise :class:`pt.SessionBusyError` once the lease is lost."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._renew)
            nursery.start_soon(self._pull)
            while True:
                at = self.deadline - self.margin
                if trio.current_time() >= at:
                    self._lose(
                        "no renewal of its lease succeeded before it ran out: the store did not "
                        "answer, or this process was paused"
                    )
                await trio.sleep_until(at)

    async def _renew(self) -> None:
        backend = as_leased(self.backend)
        assert backend is not None  # a lease with a ttl is a leased backend's
        last = trio.current_time()
        failures = 0  # renewals failed in a row: the first is logged, then the recovery
        while True:
            await trio.sleep_until(last + self.interval)
            started = trio.current_time()
            try:
                renewed = await backend.renew(self.lease)
            except Exception as exc:
                failures += 1
                # retried every 0.5 s: one warning per outage, the retries at debug level
                sessions_logger.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "session %r: lease renewal failed (%s); retrying",
                    self.lease.session_id,
                    exception_line(exc),
                )
                last = started - self.interval + min(self.interval, 0.5)
                continue
            if failures:
                sessions_logger.warning(
                    "session %r: lease renewal works again after %d failures",
                    self.lease.session_id,
                    failures,
                )
                failures = 0
            if not renewed:
                self._lose("its lease expired or was taken over")
            self.deadline = started + (self.lease.ttl or 0.0)
            last = started
            self._pull_due.set()

    async def _pull(self) -> None:
        """Move the inbox after each renewal, in a task of its own: a slow commit of what it
        moved (a lock wait) must not hold up the renewals that keep the lease."""
        while True:
            await self._pull_due.wait()
            self._pull_due = trio.Event()
            if self.agent is None:  # still opening: no agent to move the inbox into yet
                continue
            try:
                await pull_inbox(self.backend, self.agent, self.recorder)
            except SessionBusyError:
                raise
            except Exception as exc:  # tried again after the next renewal: like one, one line
                sessions_logger.warning(
                    "session %r: moving its inbox failed (%s); trying again at the next renewal",
                    self.lease.session_id,
                    exception_line(exc),
                )

    @asynccontextmanager
    async def kept(self) -> AsyncIterator[None]:
        """Renew the lease while the block runs, before the agent exists: a ``replay="safe"``
        tool re-run at takeover may take longer than the lease. When the lease is lost the
        block is cancelled and :class:`pt.SessionBusyError` comes out (one exception, not a
        group)."""
        if not self.needed:
            yield
            return
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.run)
                yield
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            leaf = plain_exception(group, sessions_logger)
            raise leaf from leaf.__cause__

    def _lose(self, why: str) -> None:
        error = SessionBusyError(
            f"session {self.lease.session_id!r}: this holder lost it ({why}); its run was "
            "stopped and nothing more is written under its lease",
            session_id=self.lease.session_id,
        )
        self.recorder.lose(error)
        raise error
