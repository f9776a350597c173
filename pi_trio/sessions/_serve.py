"""``pt.serve_sessions``: a worker that runs the sessions of a shared store that have input.

A worker claims up to ``concurrency`` free sessions with pending work at a time (``FOR UPDATE
SKIP LOCKED``: workers never wait on each other, and no session is claimed twice), opens each
as :meth:`SessionStore.open_agent` would (its log folded back, an interrupted tail repaired),
moves its inbox into its queues, runs it until nothing is queued, and gives it back. It wakes on
PostgreSQL ``LISTEN``/``NOTIFY`` (``store.enqueue`` notifies) and polls every ``poll_interval``
seconds as well, in case a notification was missed (a reconnect, say).

A worker killed mid-run leaves its sessions' leases to expire (``lease_ttl``); another worker then
claims them (they are still pending), repairs what the kill interrupted, and goes on with their
queues. A session whose log cannot be read is logged and left alone until new input arrives.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any, cast

import trio

from .._callbacks import exception_line
from .._errors import SessionBusyError, SessionStoreError
from .._groups import plain_exception
from .._logging import sessions_logger
from ..agent import Agent
from ._holders import new_holder
from ._keeper import pull_inbox
from ._pg_schema import CHANNEL
from ._postgres import PostgresBackend
from ._recorder import SessionRecorder
from ._store import SessionStore

__all__ = ["serve_sessions"]

AgentOptions = Mapping[str, Any] | Callable[[str], Mapping[str, Any]]


async def serve_sessions(
    store: SessionStore,
    agent_options: AgentOptions,
    *,
    concurrency: int = 8,
    poll_interval: float = 1.0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the store's sessions that have queued input, ``concurrency`` at a time, forever.

    Each claimed session is opened with ``agent_options`` (``open_agent``'s keyword arguments:
    ``initial_state`` with the tools and model, ``stream_fn``, hooks...; or a function of the
    session id returning them, called once per claim), runs until idle (nothing queued), and
    is released. ``await nursery.start(pt.serve_sessions, store, options)`` returns once the
    worker listens.

    Args:
        store: a PostgreSQL store (``open_session_store("postgresql://...")``).
        agent_options: the agents' options, or a function of the session id making them.
        concurrency: how many sessions this worker runs at once.
        poll_interval: seconds between looks for work when no notification came (doubled
            after each claim that failed in a row, up to 30 s).

    Raises:
        TypeError: the store is not a PostgreSQL one (SQLite has no inbox or worker pool).
        ValueError: ``concurrency`` is below 1 or ``poll_interval`` is not above 0.

    Cancellation is the graceful shutdown: every run is aborted (its transcript closed in pi's
    aborted shape), what was noted is committed, and every lease is released, sessions with
    queued input left pending for another worker.
    """
    backend = store.backend
    if not isinstance(backend, PostgresBackend):
        raise TypeError(
            f"serve_sessions() needs a PostgreSQL store; {backend.description} is not one"
        )
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency!r}")
    if not poll_interval > 0:  # 0 would retry a failing claim in a busy loop (NaN too)
        raise ValueError(
            f"poll_interval must be a positive number of seconds, not {poll_interval!r}"
        )
    worker = _Worker(store, backend, agent_options, concurrency, _Resting(poll_interval))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.listen)
            task_status.started()
            await worker.claim_loop(nursery, poll_interval)
    except BaseExceptionGroup as group:  # a KeyboardInterrupt or SystemExit from a run
        leaf = plain_exception(group, sessions_logger)
        raise leaf from leaf.__cause__


class _Worker:
    def __init__(
        self,
        store: SessionStore,
        backend: PostgresBackend,
        options: AgentOptions,
        concurrency: int,
        resting: _Resting,
    ) -> None:
        self.store = store
        self.backend = backend
        self.options = options
        self.concurrency = concurrency
        self.resting = resting
        self.running = 0
        self.holder = new_holder("worker-" + secrets.token_hex(4))
        self.wake = trio.Event()

    def poke(self) -> None:
        self.wake.set()

    async def claim_loop(self, nursery: trio.Nursery, poll_interval: float) -> None:
        failures = 0  # claims failed in a row (the database down, say)
        while True:
            self.wake = trio.Event()  # before the claim: a notification during it still counts
            free = self.concurrency - self.running
            leases = []
            if free > 0:
                taken = trio.current_time()
                try:
                    skip = self.resting.skipped(taken)
                    leases = await self.backend.claim(self.holder, free, skip)
                except Exception as exc:
                    failures += 1
                    _log_claim_failure(exc, failures, _retry_delay(poll_interval, failures))
                else:
                    if failures:
                        sessions_logger.warning(
                            "claiming sessions works again after %d failures", failures
                        )
                    failures = 0
                for lease in leases:
                    self.running += 1
                    nursery.start_soon(self.run_one, lease, taken)
                if leases and len(leases) == free:
                    continue  # maybe more work: look again once a slot frees
            delay = _retry_delay(poll_interval, failures)
            with trio.move_on_after(self.resting.wait_at_most(delay, trio.current_time())):
                await self.wake.wait()

    async def listen(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Wake the claim loop on every notification; when LISTEN fails (the database down),
        poll alone while it opens a new connection, once a second at first, then less often (up
        to every 30 s); once it listens again it wakes the claim loop (what came meanwhile).

        The connection waits in a worker thread, at most half a second at a time, so a
        cancellation takes effect within that (never abandoning the thread)."""
        failures = 0  # connections failed in a row
        while True:
            try:
                conn = await trio.to_thread.run_sync(self.backend.connect_raw)
                try:
                    await trio.to_thread.run_sync(conn.execute, f"LISTEN {CHANNEL}")
                    task_status.started()
                    task_status = trio.TASK_STATUS_IGNORED
                    if failures:
                        sessions_logger.warning("LISTEN works again after %d failures", failures)
                        failures = 0
                        self.poke()
                    while True:
                        if await trio.to_thread.run_sync(_wait_for_notification, conn):
                            self.poke()
                finally:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(conn.close)
            except Exception as exc:
                failures += 1
                if failures == 1:  # the claim loop logs the outage itself
                    text = exception_line(exc)
                    sessions_logger.warning("LISTEN failed (%s): polling for work meanwhile", text)
            task_status.started()
            task_status = trio.TASK_STATUS_IGNORED
            await trio.sleep(_retry_delay(1.0, failures))

    async def run_one(self, lease: Any, taken: float) -> None:
        session_id = lease.session_id
        try:
            if self.resting.resting(session_id, trio.current_time()):
                # it failed while this claim was on its way (the list of those left out was
                # made before): given back still pending, to be claimed when it is due
                with trio.CancelScope(shield=True):
                    await self.backend.release(lease)
                return
            try:
                made = self.options(session_id) if callable(self.options) else self.options
                options = dict(made)
            except BaseException as exc:
                # not retried until new input comes, unless the store failed (see below)
                give_up = isinstance(exc, Exception) and not isinstance(exc, SessionStoreError)
                with trio.CancelScope(shield=True):
                    await self.backend.release(lease, give_up=give_up)
                raise
            initial_state = options.pop("initial_state", None)
            opened = self.store.open_leased(lease, taken, initial_state, options, set_aside=True)
            async with opened as agent:
                await run_until_idle(self.backend, agent)
        except SessionBusyError as exc:
            sessions_logger.warning("%s", exc)  # its text names the session
        except SessionStoreError as exc:  # the store, not the session: left pending
            failures, delay = self.resting.failed(session_id, trio.current_time())
            again = f" ({failures} in a row)" if failures > 1 else ""
            sessions_logger.warning(
                "session %r: %s; it stays pending, to be claimed again in %.3g s%s",
                session_id,
                exception_line(exc),
                delay,
                again,
            )
        except Exception:
            sessions_logger.exception(
                "session %r failed; it stays in the store, set aside until new input comes",
                session_id,
            )
        else:
            self.resting.recovered(session_id)
        finally:
            self.running -= 1
            self.poke()  # a free slot; a session the store failed is not claimed until due


async def run_until_idle(backend: PostgresBackend, agent: Agent) -> None:
    """Move the inbox in and run until nothing is queued (each round drains at least one
    message; a round that changed nothing ends it, so a failing model cannot spin). Tool calls
    waiting for a person's decision are run once every one of them is decided; until then the
    session is left (idle: a decision in its inbox makes it pending again)."""
    recorder = cast(SessionRecorder, agent.recorder)
    while True:
        await pull_inbox(backend, agent, recorder)
        state = agent.state
        if state.awaiting_approval:  # tool calls wait: run them once all are decided
            if state.pending_approvals:
                return
            before_calls = len(state.messages)
            await agent.continue_()
            if len(state.messages) == before_calls:
                return
            continue
        if not agent.has_queued_messages():
            return
        before = (len(agent.queued()), len(agent.state.messages))
        if not agent.state.messages:  # nothing to continue from: the first message prompts
            first = agent.queued()[0]
            agent.remove_queued(first.id)
            await agent.prompt(first.message)
        else:
            await agent.continue_()
        if (len(agent.queued()), len(agent.state.messages)) == before:
            return


class _Resting:
    """The sessions the store failed (a :class:`pt.SessionStoreError` while one ran), each left
    out of this worker's claims until it is due again: ``poll_interval`` after its first
    failure, twice as long after each further one in a row, up to 30 s (also when
    ``poll_interval`` is longer). So a session the store
    keeps refusing (a trigger, a privilege missing for its rows) is neither claimed nor logged
    at every poll and every other session's end, and the rest of the queue goes on. Other
    workers keep their own account; a session run through is forgotten, and so is one not
    seen again for twice the longest delay (deleted, or run by another worker)."""

    def __init__(self, poll_interval: float) -> None:
        self.poll_interval = poll_interval
        self.sessions: dict[str, tuple[int, float]] = {}  # id: failures in a row, when due

    def failed(self, session_id: str, now: float) -> tuple[int, float]:
        """Count a failure; the failures in a row and the seconds until the session is due
        (at most 30 s, whatever the poll interval: new input for it waits no longer)."""
        failures = self.sessions.get(session_id, (0, now))[0] + 1
        delay = min(_retry_delay(self.poll_interval, failures), _MAX_RETRY_DELAY)
        self.sessions[session_id] = (failures, now + delay)
        return failures, delay

    def resting(self, session_id: str, now: float) -> bool:
        """Whether the session is not due yet."""
        return self.sessions.get(session_id, (0, now))[1] > now

    def recovered(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)

    def skipped(self, now: float) -> list[str]:
        """The sessions not due yet (forgetting those long past due)."""
        forget = now - 2 * _MAX_RETRY_DELAY
        for session_id, (_, due) in list(self.sessions.items()):
            if due < forget:
                del self.sessions[session_id]
        return [session_id for session_id, (_, due) in self.sessions.items() if due > now]

    def wait_at_most(self, delay: float, now: float) -> float:
        """``delay``, or less if a session resting falls due before it."""
        due = [when - now for _, when in self.sessions.values() if when > now]
        return min([delay, *due])


def _wait_for_notification(conn: Any) -> bool:
    return any(True for _ in conn.notifies(timeout=0.5, stop_after=1))


_MAX_RETRY_DELAY = 30.0


def _retry_delay(poll_interval: float, failures: int) -> float:
    """Seconds until the next look for work: ``poll_interval``, doubled for each claim that
    failed in a row up to 30 s (a database that is down is not asked every second)."""
    if not failures:
        return poll_interval
    doubled = poll_interval * 2.0 ** min(failures - 1, 30)
    return max(poll_interval, min(doubled, _MAX_RETRY_DELAY))


def _log_claim_failure(exc: Exception, failures: int, delay: float) -> None:
    """The first failure of a run of them with its traceback, the next ones in one line
    each (the first line of the error's text: the database's own may go on with the query)."""
    if failures == 1:
        sessions_logger.error("claiming sessions failed; retrying in %.3g s", delay, exc_info=exc)
    else:
        text = exception_line(exc)
        sessions_logger.error(
            "claiming sessions failed again (%d in a row): %s; retrying in %.3g s",
            failures,
            text,
            delay,
        )
