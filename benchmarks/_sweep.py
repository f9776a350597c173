"""Scenarios run at several sizes, one fresh process per size (S5x: S5 at 100 to 10,000 agents).

A sweep scenario names a base scenario and one of its parameters; the runner runs the base at
each size (every implementation, the Node reference included, through its usual entry point)
and :func:`combine` turns the per-size results into the sweep's figures:

* ``us_per_agent_turn_N``: wall time over agents x (turns + 1), at each size ``N``;
* ``flatness``: the cost per agent-turn at the largest size over that at the smallest (1.0 is
  perfectly flat);
* ``rss_kib_per_agent``: the marginal peak RSS of one agent, (peak RSS at the largest size -
  peak RSS at the smallest) / (the difference in agents), in KiB, so the interpreter, the
  libraries and the process's fixed heap are not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["Sweep", "combine", "run_sweep"]


@attrs.frozen
class Sweep:
    """Run scenario ``base`` once per size of ``param`` (``--quick`` changes the other
    parameters, never the sizes, so the figures keep their names)."""

    base: str
    param: str
    sizes: tuple[int, ...]


def size_label(size: int) -> str:
    """100 -> "100", 1000 -> "1k", 10000 -> "10k"."""
    return f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size)


def combine(sizes: tuple[int, ...], turns: int, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The sweep's result from one base result per size (in the order of ``sizes``)."""
    for size, result in zip(sizes, results, strict=True):
        if "error" in result:
            return {"error": f"at {size}: {result['error']}"}
    figures: dict[str, float] = {}
    per_turn: list[float] = []
    for size, result in zip(sizes, results, strict=True):
        cost = result["figures"]["wall_s"] / (size * (turns + 1)) * 1e6
        figures[f"us_per_agent_turn_{size_label(size)}"] = cost
        per_turn.append(cost)
    figures["flatness"] = per_turn[-1] / per_turn[0]
    low, high = results[0]["figures"]["peak_rss_mib"], results[-1]["figures"]["peak_rss_mib"]
    figures["rss_kib_per_agent"] = (high - low) * 1024 / (sizes[-1] - sizes[0])
    figures["peak_rss_mib"] = high
    checks: dict[str, int] = {}
    for result in results:
        for name, value in result.get("checks", {}).items():
            checks[name] = max(checks.get(name, 0), int(value))
    info = {
        size_label(size): result.get("info", {})
        for size, result in zip(sizes, results, strict=True)
    }
    return {"figures": figures, "checks": checks, "info": info}


def run_sweep(
    sweep: Sweep, params: dict[str, Any], run_one: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """Run the base scenario at each size with ``run_one`` (one fresh process each)."""
    base = {key: value for key, value in params.items() if key != "scenario"}
    sizes = sweep.sizes
    results = [run_one({"scenario": sweep.base, **base, sweep.param: size}) for size in sizes]
    return combine(sizes, int(base.get("turns", 0)), results)
