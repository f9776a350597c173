"""What :func:`stress` found: one :class:`Violation` per bad run, and the :class:`StressReport`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import attrs

__all__ = ["AbortMode", "RunMode", "StressProgress", "StressReport", "Violation", "percentile"]

AbortMode: TypeAlias = Literal["random", "deadline", "both"]
RunMode: TypeAlias = Literal["abort", "deadline", "none"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@attrs.frozen
class Violation:
    """One run that broke an invariant, with what reproduces it.

    Attributes:
        run: the run's index (negative: a calibration run, which is never aborted).
        seed: the stress test's seed; with ``window`` it gives this run's moment again.
        mode: how the run was stopped: ``"abort"`` (``agent.abort()``), ``"deadline"`` (a
            ``trio.move_on_after`` around ``prompt()``) or ``"none"`` (not stopped).
        moment: seconds after the prompt at which the abort (or the deadline) was set to land.
        kinds: what was broken, among "transcript", "events", "error", "raised", "leak",
            "slow", "hung", "check".
        problems: one line per problem.
    """

    run: int
    seed: int
    mode: RunMode
    moment: float | None
    kinds: tuple[str, ...]
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "seed": self.seed,
            "mode": self.mode,
            "moment_s": self.moment,
            "kinds": list(self.kinds),
            "problems": list(self.problems),
        }


@attrs.frozen
class StressProgress:
    """Where a stress test is, handed to its ``progress`` callback after every run."""

    done: int
    total: int
    violations: int
    elapsed: float
    eta: float | None


@attrs.frozen
class StressReport:
    """The outcome of :func:`stress` (times in seconds, on ``trio.current_time()``'s clock).

    Attributes:
        runs: how many runs were stressed (calibration runs not included).
        seed, abort, concurrency: the settings, to run the same test again.
        window: the span in which abort moments were drawn (from the calibration runs).
        mid_run: aborts that landed while the run was going.
        finished_first: runs that ended before their abort landed.
        violations: the runs that broke an invariant (calibration runs included).
        leaked_tasks: tasks still alive when ``wait_for_idle()`` returned, over all runs.
        latencies: abort->idle of every abort that landed mid-run.
        wall: the whole test's duration, calibration included.
        events: events recorded by the test's listener over all runs.
    """

    runs: int
    seed: int
    abort: AbortMode
    concurrency: int
    window: float
    calibration_runs: int
    mid_run: int
    finished_first: int
    violations: tuple[Violation, ...]
    leaked_tasks: int
    latencies: tuple[float, ...]
    wall: float
    events: int

    @property
    def ok(self) -> bool:
        """No violation at all."""
        return not self.violations

    def latency(self, q: float) -> float:
        """The ``q``-th percentile of abort->idle latency in seconds (NaN: no abort landed)."""
        return percentile(self.latencies, q)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (``json.dumps(report.to_json())``)."""
        return {
            "runs": self.runs,
            "seed": self.seed,
            "abort": self.abort,
            "concurrency": self.concurrency,
            "window_s": self.window,
            "calibration_runs": self.calibration_runs,
            "mid_run_aborts": self.mid_run,
            "finished_first": self.finished_first,
            "violations": [violation.to_json() for violation in self.violations],
            "leaked_tasks": self.leaked_tasks,
            "abort_to_idle_s": {
                "count": len(self.latencies),
                "median": _finite(self.latency(50)),
                "p90": _finite(self.latency(90)),
                "p99": _finite(self.latency(99)),
                "max": _finite(max(self.latencies, default=math.nan)),
                "all": list(self.latencies),
            },
            "wall_s": self.wall,
            "events": self.events,
        }

    def summary(self, *, limit: int = 10) -> str:
        """A table of the figures, then the first ``limit`` violations, as text."""
        rate = f" ({self.runs / self.wall:,.0f} runs/s)" if self.wall > 0 else ""
        share = f" ({100 * self.mid_run / self.runs:.0f}%)" if self.runs else ""
        rows = [
            ("runs", f"{self.runs}  (seed {self.seed}, abort {self.abort}, "
                     f"concurrency {self.concurrency})"),
            ("abort window", f"{_ms(self.window)}  (from {self.calibration_runs} "
                             f"unaborted runs)"),
            ("aborts mid-run", f"{self.mid_run}{share}"),
            ("finished first", str(self.finished_first)),
            ("violations", str(len(self.violations))),
            ("leaked tasks", str(self.leaked_tasks)),
            ("abort->idle median", _ms(self.latency(50))),
            ("abort->idle p90", _ms(self.latency(90))),
            ("abort->idle p99", _ms(self.latency(99))),
            ("abort->idle max", _ms(max(self.latencies, default=math.nan))),
            ("wall", f"{self.wall:.2f} s{rate}"),
        ]  # fmt: skip
        width = max(len(name) for name, _ in rows)
        lines = [f"{name:<{width}}  {value}" for name, value in rows]
        for violation in self.violations[:limit]:
            how = (
                "calibration, not aborted"
                if violation.moment is None
                else f"{violation.mode} at {_ms(violation.moment)}"
            )
            lines.append(f"violation: run {violation.run} ({how}; {', '.join(violation.kinds)})")
            lines.extend(f"  {problem}" for problem in violation.problems)
        if len(self.violations) > limit:
            lines.append(f"... and {len(self.violations) - limit} more violations")
        return "\n".join(lines)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _ms(seconds: float) -> str:
    if math.isnan(seconds):
        return "-"
    if seconds < 0.01:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e3:,.1f} ms"
