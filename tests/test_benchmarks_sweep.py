"""S5x: a scenario run at several sizes, one fresh process each, and the figures it reports."""

from __future__ import annotations

import math
from functools import partial

import pytest

from benchmarks import _reference
from benchmarks._runner import run_job
from benchmarks._spec import BY_ID
from benchmarks._sweep import Sweep, combine, run_sweep, size_label


def _s5(wall_s: float, rss: float) -> dict[str, object]:
    return {"figures": {"wall_s": wall_s, "peak_rss_mib": rss}, "checks": {}, "info": {}}


def test_combine_gives_cost_per_agent_turn_flatness_and_marginal_rss() -> None:
    sizes = (100, 1000, 10_000)
    # 11 agent-turns each: 100 agents in 0.011 s is 10 µs per agent-turn
    results = [_s5(0.011, 40.0), _s5(0.121, 50.0), _s5(1.32, 139.0)]
    figures = combine(sizes, 10, results)["figures"]
    assert figures["us_per_agent_turn_100"] == pytest.approx(10.0)
    assert figures["us_per_agent_turn_1k"] == pytest.approx(11.0)
    assert figures["us_per_agent_turn_10k"] == pytest.approx(12.0)
    assert figures["flatness"] == pytest.approx(1.2)
    assert figures["rss_kib_per_agent"] == pytest.approx(99 * 1024 / 9900)


def test_combine_reports_the_size_that_failed() -> None:
    result = combine((10, 20), 1, [_s5(0.1, 1.0), {"error": "exit 1: boom"}])
    assert result == {"error": "at 20: exit 1: boom"}


def test_s5x_figures_are_named_after_its_sizes() -> None:
    scenario = BY_ID["S5x"]
    assert scenario.sweep is not None and scenario.sweep.base == "S5"
    keys = {figure.key for figure in scenario.figures}
    for size in scenario.sweep.sizes:
        assert f"us_per_agent_turn_{size_label(size)}" in keys
    assert {"flatness", "rss_kib_per_agent"} <= keys


@pytest.mark.parametrize("impl", ["pi_trio", "floor"])
def test_a_sweep_runs_each_size_in_its_own_process(impl: str) -> None:
    reference = _reference.Reference(False, "not selected")
    sweep = Sweep("S5", "agents", (3, 12))
    result = run_sweep(
        sweep, {"scenario": "S5x", "turns": 2}, partial(run_job, impl, reference=reference)
    )
    assert "error" not in result, result
    figures = result["figures"]
    for key in ("us_per_agent_turn_3", "us_per_agent_turn_12", "flatness", "peak_rss_mib"):
        assert math.isfinite(figures[key]) and figures[key] > 0, key
    # each size's own run: 3 agents x 3 turns and 12 agents x 3 turns of events
    assert result["info"]["12"]["events"] == 4 * result["info"]["3"]["events"]
