"""``pi-trio worker --store URL``: one worker of a pool that runs the sessions of a PostgreSQL
store (:func:`pt.serve_sessions`), until Ctrl-C or SIGTERM (both shut it down gracefully).

Signals: once it serves, the first SIGINT or SIGTERM shuts it down gracefully (runs aborted,
leases released; exit status 0 after SIGTERM, ``pi-trio: interrupted`` and 130 after Ctrl-C,
as for every command); a second one while that is still going on (a database that
stopped answering) ends the process at once, its leases left to expire. Before it serves (the
store still connecting, maybe to a server that never answers) it holds nothing, so a signal
ends it at once: SIGTERM as its default action does, SIGINT with ``pi-trio: interrupted``
and 130.

Every session it runs gets the command's usual agent (``--model``: the scripted model by
default, or ``provider/id``) with the example tools; a resumed session keeps its logged
transcript, model and settings.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import trio

from .._errors import PiError
from ._interrupt import INTERRUPTED
from ._models import SCRIPTED, CliError

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["add_worker_parser", "run_worker", "serve_worker"]


def add_worker_parser(commands: Any) -> None:
    """Register ``worker`` on the ``pi-trio`` subparsers."""
    worker = commands.add_parser(
        "worker", help="run the sessions of a PostgreSQL store that have queued input"
    )
    worker.add_argument("--store", required=True, metavar="URL", help="postgresql://... store")
    worker.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="sessions at once (default 8)"
    )
    worker.add_argument(
        "--lease-ttl",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a lease lasts unless renewed (default 30): after a crash, its "
        "sessions wait this long for another worker",
    )
    worker.add_argument(
        "--model", default=SCRIPTED, metavar="PROVIDER/ID", help="the agents' model"
    )
    worker.add_argument("--delay", type=float, default=0.0, help="scripted model: word delay")
    worker.add_argument("--base-url", metavar="URL", help="the model's server")


def run_worker(args: argparse.Namespace) -> int:
    from ._agents import SYSTEM_PROMPT, agent_factory

    if not args.store.startswith(("postgresql://", "postgres://")):
        raise CliError("pi-trio worker needs a PostgreSQL store: --store postgresql://...")
    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1")
    make_agent = agent_factory(
        args.model, token_delay=args.delay, system_prompt=SYSTEM_PROMPT, base_url=args.base_url
    )

    state = _Signalled()

    async def main() -> None:
        with (
            trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals,
            trio.CancelScope() as scope,
        ):
            # a system task, not a nursery: the store's errors reach ``except PiError`` bare
            trio.lowlevel.spawn_system_task(_cancel_on_signal, signals, scope, state)
            await serve_worker(
                args.store, make_agent, args.lease_ttl, args.concurrency, task_status=state
            )

    try:
        trio.run(main)
    except PiError as exc:
        raise CliError(str(exc)) from None
    if state.stopped_by == signal.SIGINT:  # Ctrl-C ends it as it ends every command
        print("pi-trio: interrupted", file=sys.stderr, flush=True)
        return INTERRUPTED
    return 0


async def serve_worker(
    store_url: str,
    make_agent: Callable[[], Agent],
    lease_ttl: float,
    concurrency: int,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the sessions of the store at *store_url* with agents like ``make_agent()``'s
    until cancelled; ``nursery.start`` returns the store's description once it serves.

    Once serving, what is alive by then (modules, the model, the store's pool) is moved out of
    the collector's way with ``gc.freeze()``: a full collection with many sessions running then
    walks only their agents (docs/benchmarks.md, "Many agents in one process"). On
    cancellation the sessions it runs stop as :func:`pt.serve_sessions` says, then the store
    closes.
    """
    from ..sessions import open_session_store, serve_sessions

    def options(session_id: str) -> dict[str, Any]:
        template = make_agent()
        return {"initial_state": template.state, "stream_fn": template.stream_fn}

    async with open_session_store(store_url, lease_ttl=lease_ttl) as store:
        serving = _FreezeThenReport(task_status, store.backend.description)
        await serve_sessions(store, options, concurrency=concurrency, task_status=serving)


class _FreezeThenReport:
    """The task status :func:`serve_worker` hands ``serve_sessions``: once it serves, freeze
    the heap, then report the store's description to whoever started the worker."""

    def __init__(self, outer: trio.TaskStatus[str], description: str) -> None:
        self._outer = outer
        self._description = description

    def started(self, value: object = None) -> None:
        gc.freeze()
        self._outer.started(self._description)


class _Signalled:
    """``pi-trio worker``'s task status (one line on stdout once it serves), and what the
    signal watcher needs to know: whether it serves yet, whether a shutdown is under way."""

    def __init__(self) -> None:
        self.serving = False
        self.stopping = False
        self.stopped_by: int | None = None  # the signal that began the graceful shutdown

    def started(self, value: str | None = None) -> None:
        self.serving = True
        print(f"pi-trio worker: serving {value}", flush=True)


async def _cancel_on_signal(
    signals: AsyncIterator[int], scope: trio.CancelScope, state: _Signalled
) -> None:
    try:
        async for signum in signals:
            if state.serving and not state.stopping:
                state.stopping = True
                state.stopped_by = signum
                scope.cancel()
                continue
            # before it serves (a connect or a table lock can block for long, in a thread that
            # a cancellation does not abandon), or a second signal during the shutdown
            _exit_now(signum, "interrupted again; exiting now" if state.stopping else "")
    except RuntimeError:  # the worker ended (e.g. raised) before this task first ran
        return


def _exit_now(signum: int, why: str) -> None:
    if signum == signal.SIGINT or why:
        print(f"pi-trio: {why or 'interrupted'}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    if signum == signal.SIGTERM:  # die of it, as the default action does: a supervisor sees
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # "killed by SIGTERM", not an error
        os.kill(os.getpid(), signal.SIGTERM)
    os._exit(128 + signum)
