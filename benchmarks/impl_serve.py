"""S9: sessions through ``pt.serve_sessions`` on PostgreSQL, with 1 and 2 worker processes,
beside the same agents in memory in one process.

Each of ``sessions`` sessions gets one queued prompt ("Go.") whose answer is ``turns`` turns of
one noop call plus a final text (S5's shape). The prompts are enqueued first and held back;
the worker processes start (``python -m benchmarks.impl_serve worker URL OUT``), and once all
listen the sessions are released at once (one ``UPDATE`` and a ``NOTIFY``): the wall time runs
from there until every session is idle (polled in the database every 20 ms). A turn's latency
is the time between two model calls of one session (its tool ran and its commits were made in
between), measured in the worker. CPU µs per turn is the worker processes' CPU time (the
PostgreSQL server's is not counted) over the turns, steadier than wall time on a busy machine.
PostgreSQL comes from ``$PI_TRIO_TEST_POSTGRES_URL`` or a throwaway server started here
(tests/sessions/_pg.py, fsync off: a test server); without one the figures are NaN.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

import trio

import pi_trio as pt

from . import _script as script

ROOT = Path(__file__).resolve().parents[1]


class TurnClock:
    """A stream function that notes when each session calls its model, then streams ``model``."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = {}

    def wrap(self, model: Any) -> Any:
        def stream(model_: Any, context: Any, options: Any) -> Any:
            self.calls.setdefault(options.session_id or "", []).append(time.perf_counter())
            return model(model_, context, options)

        return stream

    def latencies_ms(self) -> list[float]:
        return [
            (b - a) * 1000 for times in self.calls.values() for a, b in itertools.pairwise(times)
        ]


def _p99(values: list[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _in_memory(sessions: int, turns: int) -> tuple[float, list[float]]:
    clock = TurnClock()
    crowd = []
    for index in range(sessions):
        model = script.scripted(script.noop_answers(turns))
        state = pt.AgentState(model=model.model, tools=[script.NOOP])
        crowd.append(pt.Agent(state, stream_fn=clock.wrap(model), session_id=f"m{index}"))
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for agent in crowd:
            nursery.start_soon(agent.prompt, "Go.")
    return time.perf_counter() - start, clock.latencies_ms()


def _options(clock: TurnClock, turns: int) -> Any:
    def options(session_id: str) -> dict[str, Any]:
        model = script.scripted(script.noop_answers(turns))
        state = pt.AgentState(model=model.model, tools=[script.NOOP])
        return {"initial_state": state, "stream_fn": clock.wrap(model)}

    return options


def worker_main(url: str, out: str, concurrency: int, turns: int) -> None:
    """One worker process: serve until SIGTERM, then write the turn latencies to ``out``."""
    clock = TurnClock()
    cpu = [0.0]

    async def main() -> None:
        async with pt.open_session_store(url, lease_ttl=30) as store:
            with trio.open_signal_receiver(signal.SIGTERM) as signals:
                async with trio.open_nursery() as nursery:
                    await nursery.start(
                        lambda task_status: pt.serve_sessions(
                            store,
                            _options(clock, turns),
                            concurrency=concurrency,
                            task_status=task_status,
                        )
                    )
                    Path(out).with_suffix(".ready").write_text("")
                    cpu[0] = time.process_time()
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        break

    trio.run(main)
    used = time.process_time() - cpu[0]  # this process's CPU (threads included) while serving
    Path(out).write_text(json.dumps({"latencies": clock.latencies_ms(), "cpu_s": used}))


def _idle(url: str) -> bool:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pi_trio_sessions WHERE pending OR holder IS NOT NULL"
        ).fetchone()
    return row is not None and row[0] == 0


def _start_worker(url: str, out: Path, concurrency: int, turns: int) -> subprocess.Popen[bytes]:
    command = ["worker", url, str(out), str(concurrency), str(turns)]
    return subprocess.Popen([sys.executable, "-m", "benchmarks.impl_serve", *command], cwd=ROOT)


async def _served(
    server: str, sessions: int, turns: int, workers: int, concurrency: int
) -> tuple[float, list[float], float]:
    import psycopg

    name = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = urllib.parse.urlunsplit(urllib.parse.urlsplit(server)._replace(path="/" + name))
    tmp = Path(tempfile.mkdtemp())
    try:
        async with pt.open_session_store(url) as store:
            for index in range(sessions):
                await store.enqueue(f"s{index}", "Go.")
        outs = [tmp / f"w{i}.json" for i in range(workers)]
        with psycopg.connect(url, autocommit=True) as conn:  # held back until all are up
            conn.execute("UPDATE pi_trio_sessions SET pending = false")
        procs = [_start_worker(url, out, concurrency, turns) for out in outs]
        try:
            while not all(out.with_suffix(".ready").exists() for out in outs):  # noqa: ASYNC110
                await trio.sleep(0.02)
            start = time.perf_counter()
            with psycopg.connect(url, autocommit=True) as conn:  # go
                conn.execute("UPDATE pi_trio_sessions SET pending = true")
                conn.execute("SELECT pg_notify('pi_trio_inbox', 'go')")
            while not await trio.to_thread.run_sync(_idle, url):  # noqa: ASYNC110 (others' work)
                await trio.sleep(0.02)
            wall = time.perf_counter() - start
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(timeout=60)
        results = [json.loads(out.read_text()) for out in outs]
        latencies = [v for result in results for v in result["latencies"]]
        return wall, latencies, sum(result["cpu_s"] for result in results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _server() -> tuple[str | None, Path | None]:
    given = os.environ.get("PI_TRIO_TEST_POSTGRES_URL")
    if given:
        return given, None
    sys.path.insert(0, str(ROOT))
    from tests.sessions import _pg

    if _pg.binaries() is None:
        return None, None
    directory = Path(tempfile.mkdtemp(prefix="pi-trio-bench-pg-", dir="/tmp"))
    return _pg.start(directory), directory


async def s9_serve(sessions: int, turns: int, concurrency: int) -> dict[str, Any]:
    total = sessions * turns
    cpu = time.process_time()
    wall, latencies = await _in_memory(sessions, turns)
    figures: dict[str, Any] = {
        "in_memory_turns_per_s": total / wall,
        "in_memory_p99_ms": _p99(latencies),
        "in_memory_cpu_us_per_turn": (time.process_time() - cpu) / total * 1e6,
    }
    server, directory = _server()
    info: dict[str, Any] = {"postgres": server is not None}
    try:
        for workers in (1, 2):
            if server is None:
                for key in ("turns_per_s", "p99_ms", "cpu_us_per_turn"):
                    figures[f"{key}_{workers}"] = math.nan
                continue
            wall, latencies, used = await _served(server, sessions, turns, workers, concurrency)
            figures[f"turns_per_s_{workers}"] = total / wall
            figures[f"p99_ms_{workers}"] = _p99(latencies)
            figures[f"cpu_us_per_turn_{workers}"] = used / total * 1e6
            info[f"turns_measured_{workers}"] = len(latencies)
        figures["cpu_ratio_1"] = figures["cpu_us_per_turn_1"] / figures["in_memory_cpu_us_per_turn"]
    finally:
        if directory is not None:
            from tests.sessions import _pg

            _pg.stop(directory)
            shutil.rmtree(directory, ignore_errors=True)
    return {"figures": figures, "info": info}


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
