"""``pi-trio worker --store URL``: one worker of a pool that runs the sessions of a PostgreSQL
store (:func:`pt.serve_sessions`), until Ctrl-C or SIGTERM (both shut it down gracefully).

Every session it runs gets the command's usual agent (``--model``: the scripted model by
default, or ``provider/id``) with the example tools; a resumed session keeps its logged
transcript, model and settings.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any

import trio

from .._errors import PiError
from ._models import SCRIPTED, CliError

__all__ = ["add_worker_parser", "run_worker"]


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

    def options(session_id: str) -> dict[str, Any]:
        template = make_agent()
        return {"initial_state": template.state, "stream_fn": template.stream_fn}

    async def main() -> None:
        from ..sessions import open_session_store, serve_sessions

        async with open_session_store(args.store, lease_ttl=args.lease_ttl) as store:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async with trio.open_nursery() as nursery:
                    await nursery.start(
                        lambda task_status: serve_sessions(
                            store, options, concurrency=args.concurrency, task_status=task_status
                        )
                    )
                    print(f"pi-trio worker: serving {store.backend.description}", flush=True)
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        break

    try:
        trio.run(main)
    except PiError as exc:
        raise CliError(str(exc)) from None
    return 0
