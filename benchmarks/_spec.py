"""The scenarios, their sizes (full and ``--quick``) and the figures each reports."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ._sweep import Sweep, size_label

Better = Literal["lower", "higher"]


@attrs.frozen
class Figure:
    """One reported number: ``key`` in a child's ``figures``; the table shows ``label``."""

    key: str
    label: str
    better: Better
    target: str = ""
    digits: int = 1
    ratio: bool = True
    """False for counts whose quotient means nothing (aborts that landed mid-run)."""


@attrs.frozen
class Scenario:
    id: str
    name: str
    work: str
    full: dict[str, Any]
    quick: dict[str, Any]
    figures: tuple[Figure, ...]
    checks: tuple[str, ...] = ()
    """Counts that must be 0 (transcript violations, leaked tasks, ...)."""
    impls: tuple[str, ...] = ("pi_trio", "floor", "reference")
    max_reps: int | None = None
    """Scenarios that take long per process run at most this many times."""
    sweep: Sweep | None = None
    """Run as another scenario at several sizes, one fresh process each (``_sweep``)."""

    def params(self, quick: bool) -> dict[str, Any]:
        return {"scenario": self.id, **(self.quick if quick else self.full)}


_ABORT_CHECKS = ("violations", "leaks")
_S5X_SIZES = (100, 1000, 10_000)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "S1",
        "turns",
        "one prompt; 1,000 turns of one noop call, then a final text",
        {"turns": 1000},
        {"turns": 100},
        (
            Figure("us_per_turn", "µs/turn", "lower", "<= 60"),
            Figure("events_per_s", "events/s", "higher", digits=0),
            Figure("peak_rss_mib", "peak RSS MiB", "lower"),
        ),
    ),
    Scenario(
        "S2",
        "fanout",
        "one turn of 1,000 parallel sleep(10 ms, cooperative), then a final text",
        {"calls": 1000, "ms": 10},
        {"calls": 100, "ms": 10},
        (Figure("wall_ms", "prompt->idle ms", "lower", "<= 40"),),
    ),
    Scenario(
        "S3",
        "abort-coop",
        "100 parallel sleep(10 s, cooperative); abort() 50 ms after the first tool start",
        {"calls": 100, "ms": 10_000, "cooperative": True, "abort_after_ms": 50},
        {"calls": 20, "ms": 10_000, "cooperative": True, "abort_after_ms": 50},
        (Figure("abort_to_idle_ms", "abort->idle ms", "lower", "<= 3.0", 2),),
        _ABORT_CHECKS,
    ),
    Scenario(
        "S4",
        "abort-uncoop",
        "100 parallel sleep(2 s, uncooperative); abort() 50 ms after the first tool start",
        {"calls": 100, "ms": 2_000, "cooperative": False, "abort_after_ms": 50},
        {"calls": 20, "ms": 300, "cooperative": False, "abort_after_ms": 50},
        (Figure("abort_to_idle_ms", "abort->idle ms", "lower", "<= 5", 2),),
        _ABORT_CHECKS,
    ),
    Scenario(
        "S5",
        "many-agents",
        "1,000 agents at once, each 10 turns of one noop call plus a final text",
        {"agents": 1000, "turns": 10},
        {"agents": 50, "turns": 10},
        (
            Figure("wall_s", "wall s", "lower", "<= 0.6", 3),
            Figure("peak_rss_mib", "peak RSS MiB", "lower", "<= 100"),
        ),
    ),
    # round 3 (issue 19): S5 at 100, 1,000 and 10,000 agents; the cost per agent-turn flat
    Scenario(
        "S5x",
        "many-agents-sweep",
        "S5 at 100, 1,000 and 10,000 agents (one fresh process each; --quick: 2 turns)",
        {"turns": 10},
        {"turns": 2},
        (
            *(
                Figure(
                    f"us_per_agent_turn_{size_label(n)}",
                    f"µs/agent-turn, {n:,} agents",
                    "lower",
                    digits=1,
                )
                for n in _S5X_SIZES
            ),
            Figure("flatness", "10k / 100 per agent-turn", "lower", "<= 1.15", 2, ratio=False),
            Figure("rss_kib_per_agent", "peak RSS KiB per agent", "lower", "<= 15"),
        ),
        sweep=Sweep("S5", "agents", _S5X_SIZES),
        max_reps=3,
    ),
    Scenario(
        "S6",
        "stream",
        "one assistant message of 100,000 text_delta events, no tools",
        {"deltas": 100_000},
        {"deltas": 5_000},
        (Figure("events_per_s", "events/s", "higher", ">= 1M", 0),),
    ),
    Scenario(
        "S7",
        "cancel-stress",
        "2,000 fresh agents: 5 turns x 3 parallel cooperative sleep(0-2 ms), aborted at random",
        {"runs": 2000},
        {"runs": 100},
        (
            Figure("runs_per_s", "runs/s", "higher", digits=0),
            Figure("abort_idle_median_us", "abort->idle median µs", "lower", "<= 250", 0),
            Figure("abort_idle_p99_us", "abort->idle p99 µs", "lower", "<= 600", 0),
            Figure("abort_idle_p99_cpu_us", "abort->idle p99 CPU µs", "lower", digits=0),
            Figure("mid_run_aborts", "aborts that landed mid-run", "higher", digits=0, ratio=False),
        ),
        _ABORT_CHECKS,
        max_reps=3,
    ),
    Scenario(
        "S7h",
        "cancel-stress-http",
        "S7 through openai-completions against a 127.0.0.1 server (300 runs)",
        {"runs": 300},
        {"runs": 30},
        (
            Figure("runs_per_s", "runs/s", "higher", digits=0),
            Figure("abort_idle_median_us", "abort->idle median µs", "lower", digits=0),
            Figure("abort_idle_p99_us", "abort->idle p99 µs", "lower", digits=0),
            Figure("abort_idle_p99_cpu_us", "abort->idle p99 CPU µs", "lower", digits=0),
            Figure("mid_run_aborts", "aborts that landed mid-run", "higher", digits=0, ratio=False),
        ),
        (*_ABORT_CHECKS, "pool_checked_out"),
        impls=("pi_trio",),
        max_reps=3,
    ),
    # round 3: sub-agents (issue 36): S7 with every tool call a sub-agent (two levels)
    Scenario(
        "S7s",
        "cancel-stress-subagents",
        "S7 with every tool call a sub-agent that makes S7's sleep call (1,000 runs)",
        {"runs": 1000},
        {"runs": 50},
        (
            Figure("runs_per_s", "runs/s", "higher", digits=0),
            Figure("abort_idle_median_us", "abort->idle median µs", "lower", digits=0),
            Figure("abort_idle_p99_us", "abort->idle p99 µs", "lower", digits=0),
            Figure("abort_idle_p99_cpu_us", "abort->idle p99 CPU µs", "lower", digits=0),
            Figure("mid_run_aborts", "aborts that landed mid-run", "higher", digits=0, ratio=False),
        ),
        _ABORT_CHECKS,
        impls=("pi_trio",),
        max_reps=3,
    ),
    # round 2: bounded fan-out (issue 16): S2 with max_parallel_tools=50, expected ~1000/50 x 10 ms
    Scenario(
        "S2b",
        "bounded-fanout",
        "S2 with max_parallel_tools=50 (at most 50 of the 1,000 calls at once)",
        {"calls": 1000, "ms": 10, "max_parallel_tools": 50},
        {"calls": 100, "ms": 10, "max_parallel_tools": 10},
        (Figure("wall_ms", "prompt->idle ms", "lower", "~200"),),
        impls=("pi_trio",),
    ),
    # round 2: durable sessions (in-memory beside durable in the same process)
    Scenario(
        "S1d",
        "durable-turns",
        "S1 with a SQLite session store (temp dir), beside S1 in memory",
        {"turns": 1000},
        {"turns": 100},
        (
            Figure("us_per_turn", "durable µs/turn", "lower"),
            Figure("in_memory_us_per_turn", "in-memory µs/turn", "lower"),
            Figure("ratio_to_memory", "durable/in-memory", "lower", digits=2, ratio=False),
            Figure("cpu_us_per_turn", "durable CPU µs/turn", "lower"),
            Figure("in_memory_cpu_us_per_turn", "in-memory CPU µs/turn", "lower"),
        ),
        impls=("pi_trio",),
    ),
    Scenario(
        "S5d",
        "durable-many-agents",
        "S5 with one SQLite store shared by the agents, beside S5 in memory",
        {"agents": 1000, "turns": 10},
        {"agents": 50, "turns": 10},
        (
            Figure("wall_s", "durable wall s", "lower", digits=3),
            Figure("in_memory_wall_s", "in-memory wall s", "lower", digits=3),
            Figure("ratio_to_memory", "durable/in-memory", "lower", digits=2, ratio=False),
            Figure("cpu_s", "durable CPU s", "lower", digits=3),
            Figure("in_memory_cpu_s", "in-memory CPU s", "lower", digits=3),
            Figure("cpu_ratio_to_memory", "CPU durable/in-memory", "lower", "<= 2", 2, ratio=False),
            Figure("trio_thread_cpu_s", "durable CPU s, Trio thread", "lower", digits=3),
            Figure("gc_s", "durable CPU s in the cyclic GC", "lower", digits=3),
            Figure("in_memory_gc_s", "in-memory CPU s in the cyclic GC", "lower", digits=3),
            Figure("peak_rss_mib", "peak RSS MiB", "lower"),
        ),
        impls=("pi_trio",),
        max_reps=3,
    ),
    Scenario(
        "S8",
        "resume",
        "open_agent on a 1,000-turn session whose last batch was interrupted (load + repair)",
        {"turns": 1000},
        {"turns": 100},
        (
            Figure("resume_ms", "resume ms (first)", "lower", "< 50", 2),
            Figure("resume_cpu_ms", "resume CPU ms (first)", "lower", digits=2),
            Figure("resume_again_ms", "resume ms (warm)", "lower", digits=2),
        ),
        impls=("pi_trio",),
    ),
)

# round 2: scale-out (issue 14): the worker pool on PostgreSQL, 1 and 2 worker processes
SCENARIOS = (
    *SCENARIOS,
    Scenario(
        "S9",
        "serve-sessions",
        "1,000 sessions x 10 turns through serve_sessions on PostgreSQL, 1 and 2 worker "
        "processes, beside the same agents in memory",
        {"sessions": 1000, "turns": 10, "concurrency": 200},
        {"sessions": 50, "turns": 10, "concurrency": 50},
        (
            Figure("turns_per_s_1", "turns/s, 1 worker", "higher", digits=0),
            Figure("turns_per_s_2", "turns/s, 2 workers", "higher", digits=0),
            Figure("in_memory_turns_per_s", "in-memory turns/s", "higher", digits=0),
            Figure("p99_ms_1", "p99 turn ms, 1 worker", "lower", digits=2),
            Figure("p99_ms_2", "p99 turn ms, 2 workers", "lower", digits=2),
            Figure("in_memory_p99_ms", "in-memory p99 turn ms", "lower", digits=2),
            Figure("cpu_us_per_turn_1", "worker CPU µs/turn, 1 worker", "lower", digits=0),
            Figure("cpu_us_per_turn_2", "worker CPU µs/turn, 2 workers", "lower", digits=0),
            Figure("in_memory_cpu_us_per_turn", "in-memory CPU µs/turn", "lower", digits=0),
            Figure("cpu_ratio_1", "CPU 1 worker/in-memory", "lower", "<= 2", 2, ratio=False),
        ),
        impls=("pi_trio",),
        max_reps=1,
    ),
)

# round 3: compaction (issue 34)
SCENARIOS = (
    *SCENARIOS,
    Scenario(
        "S10",
        "compaction",
        "one prompt; 1,000 tool turns (400-character results) on a 20,000-token window, with "
        "compaction (reserve 2,000, keep 5,000) beside the same session without it",
        {"turns": 1000},
        {"turns": 200},
        (
            Figure("first_us_per_turn", "µs/turn, first tenth", "lower"),
            Figure("last_us_per_turn", "µs/turn, last tenth", "lower"),
            Figure("last_to_first", "last/first", "lower", "<= 1.5", 2, ratio=False),
            Figure("plain_first_us_per_turn", "no compaction: µs/turn, first tenth", "lower"),
            Figure("plain_last_us_per_turn", "no compaction: µs/turn, last tenth", "lower"),
            Figure("compactions", "compactions", "lower", digits=0, ratio=False),
        ),
        impls=("pi_trio",),
    ),
)

BY_ID = {scenario.id: scenario for scenario in SCENARIOS}
IMPLS = ("pi_trio", "floor", "reference")
