"""Micro-benchmarks of the per-turn hot path (S1's pieces); runs in a few seconds.

    .venv/bin/python benchmarks/micro_hot_path.py [--runs 5]

Prints, per figure, the median (min-max) over ``--runs`` repetitions in this process, of wall
time and of this process's CPU time (``time.process_time``: on a shared machine it leaves out the
time spent waiting for a core, so before/after comparisons are steadier):
``validate`` (one ``AgentTool.validate({})`` against a JSON-schema dict), ``faux stream`` (one
scripted message: a text in 8 deltas plus one ``noop`` call, every event read) and ``S1 loop``
(a bare ``pt.run_agent_loop`` of 1,001 turns with a counting sink, as in BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
N = 1000


async def noop(i: str, p: Any, u: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("ok")])


TOOL = pt.AgentTool("noop", "noop", "noop", SCHEMA, noop)


def scripted_turn(i: int) -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.text("thinking about it now ok"), faux.tool_call("noop", {}, id=f"c{i}")]
    )


class Sink:
    n = 0

    async def send(self, e: Any) -> None:
        self.n += 1


def bench_validate() -> tuple[float, float]:
    count = 20_000
    validate = TOOL.validate
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        validate({})
    return _per_item(start, cpu, count)


def _per_item(start: float, cpu: float, count: int) -> tuple[float, float]:
    """(wall, cpu) microseconds per item since ``start``/``cpu``."""
    wall = time.perf_counter() - start
    return wall / count * 1e6, (time.process_time() - cpu) / count * 1e6


def bench_faux_stream() -> tuple[float, float]:
    count = 2_000
    message = scripted_turn(0)
    scripted = faux.FauxModel([message] * count, chunker=faux.in_pieces(8))
    context = pt.Context("sys", [], [TOOL.spec])
    options = pt.StreamOptions()

    async def main() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            async with scripted(scripted.model, context, options) as events:
                async for _event in events:
                    pass
        return _per_item(start, cpu, count)

    return trio.run(main)


def bench_s1() -> tuple[float, float]:
    msgs = [scripted_turn(i) for i in range(N)] + [faux.assistant_message("done")]

    async def main() -> tuple[float, float]:
        scripted = faux.FauxModel(msgs, chunker=faux.in_pieces(8))
        ctx = pt.AgentContext("sys", [], [TOOL])
        cfg = pt.AgentLoopConfig(model=scripted.model, stream_fn=scripted)
        sink = Sink()
        start, cpu = time.perf_counter(), time.process_time()
        await pt.run_agent_loop([pt.UserMessage("go")], ctx, cfg, sink)
        result = _per_item(start, cpu, N + 1)
        assert sink.n == 21 * N + 14, sink.n  # the event count must not change
        return result

    return trio.run(main)


def report(name: str, fn: Callable[[], tuple[float, float]], runs: int) -> None:
    results = [fn() for _ in range(runs)]
    for kind, values in (("wall", [r[0] for r in results]), ("cpu", [r[1] for r in results])):
        print(
            f"{name:12} {kind:4} {statistics.median(values):8.2f} us/item"
            f"  (min {min(values):.2f}, max {max(values):.2f}, {runs} runs)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    report("validate", bench_validate, runs)
    report("faux stream", bench_faux_stream, runs)
    report("S1 loop", bench_s1, runs)


if __name__ == "__main__":
    main()
