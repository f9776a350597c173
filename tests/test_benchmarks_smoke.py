"""The benchmark harness at tiny sizes: results are well formed and every check finds nothing.

No timing is asserted: figures only have to be present, finite and positive.
"""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import impl_floor, impl_pi_trio
from benchmarks._common import (
    CollectorTime,
    collector_time,
    mulberry32,
    s7_schedule,
    transcript_violations,
)
from benchmarks._spec import BY_ID

ROOT = Path(__file__).resolve().parent.parent

TINY: dict[str, dict[str, Any]] = {
    "S1": {"turns": 5},
    "S2": {"calls": 10, "ms": 1},
    "S3": {"calls": 5, "ms": 10_000, "cooperative": True, "abort_after_ms": 5},
    "S4": {"calls": 5, "ms": 2_000, "cooperative": False, "abort_after_ms": 5},
    "S5": {"agents": 5, "turns": 3},
    "S5d": {"agents": 5, "turns": 3},
    "S6": {"deltas": 200},
    "S7": {"runs": 30},
    "S7h": {"runs": 8},
    "S7s": {"runs": 20},
    "S10": {"turns": 100},
}
IMPLS = {"pi_trio": impl_pi_trio, "floor": impl_floor}
CASES = [
    (scenario_id, impl)
    for scenario_id in TINY
    for impl in IMPLS
    if impl in BY_ID[scenario_id].impls
]


# figures that may be 0 at these sizes: no abort landed, no garbage collection ran
MAY_BE_ZERO = {"mid_run_aborts", "gc_s", "in_memory_gc_s"}


def _well_formed(scenario_id: str, result: dict[str, Any]) -> None:
    scenario = BY_ID[scenario_id]
    for figure in scenario.figures:
        value = result["figures"][figure.key]
        assert isinstance(value, int | float) and math.isfinite(value), (figure.key, value)
        assert value > 0 or (value == 0 and figure.key in MAY_BE_ZERO), (figure.key, value)
    assert result["figures"]["peak_rss_mib"] > 0
    for check in scenario.checks:
        assert result["checks"][check] == 0, (check, result["info"])
    json.dumps(result)


@pytest.mark.parametrize(("scenario_id", "impl"), CASES, ids=[f"{s}-{i}" for s, i in CASES])
def test_scenario_runs_clean(scenario_id: str, impl: str) -> None:
    result = IMPLS[impl].run_scenario({"scenario": scenario_id, **TINY[scenario_id]})
    _well_formed(scenario_id, result)


@pytest.mark.parametrize("scenario_id", ["S1", "S2", "S5", "S6"])
def test_floor_dispatches_as_many_events_as_pi_trio(scenario_id: str) -> None:
    params = {"scenario": scenario_id, **TINY[scenario_id]}
    ours = impl_pi_trio.run_scenario(params)["info"]["events"]
    assert ours > 0
    assert impl_floor.run_scenario(params)["info"]["events"] == ours


def test_s5d_splits_its_durable_cpu_between_the_threads_and_the_collector() -> None:
    figures = impl_pi_trio.run_scenario({"scenario": "S5d", **TINY["S5d"]})["figures"]
    assert 0 < figures["trio_thread_cpu_s"] < figures["cpu_s"]  # the store's thread: the rest
    assert figures["gc_s"] <= figures["cpu_s"]


def test_collector_time_counts_each_collection_in_its_block() -> None:
    gc.collect()  # before the block: not counted
    with collector_time() as spent:
        gc.collect()
        gc.collect(0)
    gc.collect()
    assert spent.collections == 2 and spent.seconds > 0


def test_collector_time_leaves_out_a_collection_already_running_when_it_began() -> None:
    entered: list[tuple[Any, CollectorTime]] = []

    class EntersDuringACollection:  # its finalizer runs inside the collection of its cycle
        def __del__(self) -> None:
            block = collector_time()
            entered.append((block, block.__enter__()))

    cycle = EntersDuringACollection()
    cycle.itself = cycle  # type: ignore[attr-defined]
    del cycle
    gc.collect()
    block, spent = entered[0]
    block.__exit__(None, None, None)
    assert (spent.collections, spent.seconds) == (0, 0.0)


def test_s7_aborts_land_mid_run_and_the_schedule_is_pis() -> None:
    rand = mulberry32(12345)
    # The same numbers as the JavaScript one-liner (checked against Node).
    assert [rand() for _ in range(2)] == [0.9797282677609473, 0.3067522644996643]
    sleeps, abort_at = s7_schedule(1)[0]
    assert len(sleeps) == 5 and all(len(turn) == 3 for turn in sleeps)
    assert 0 <= abort_at <= sum(max(turn) for turn in sleeps)
    result = impl_pi_trio.run_scenario({"scenario": "S7", "runs": 30})
    assert result["figures"]["mid_run_aborts"] + result["info"]["finished_first"] == 30


def test_transcript_check_finds_what_it_should() -> None:
    call = {"role": "assistant", "stopReason": "toolUse", "toolCalls": ["a", "b"]}
    aborted = {"role": "assistant", "stopReason": "aborted", "toolCalls": []}
    result_a = {"role": "toolResult", "toolCallId": "a"}
    result_b = {"role": "toolResult", "toolCallId": "b"}
    user = {"role": "user"}
    assert transcript_violations([user, call, result_a, result_b, aborted]) == []
    assert transcript_violations([user, call, result_a, aborted])  # b has no result
    assert transcript_violations([user, call, result_a, result_b, result_b, aborted])
    assert transcript_violations([user, result_a, aborted])  # orphan
    assert transcript_violations([user, call, result_a, result_b])  # not ended by the assistant
    stop = {"role": "assistant", "stopReason": "stop", "toolCalls": []}
    assert transcript_violations([user, stop]) != []
    assert transcript_violations([user, stop], allowed_last=("stop",)) == []
    cut_off = {"role": "assistant", "stopReason": "aborted", "toolCalls": ["c"]}
    assert transcript_violations([user, cut_off]) == []  # never executed: needs no result


@pytest.mark.slow  # the benchmark runner's processes
def test_the_command_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    args = ["--quick", "--only", "S3,S6", "--impls", "pi_trio,floor", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "| S3 abort-coop |" in done.stdout and "| S6 stream |" in done.stdout
    assert "[  4/4]" in done.stderr  # the progress display
    payload = json.loads(out.read_text())
    assert payload["quick"] is True and set(payload["scenarios"]) == {"S3", "S6"}
    s3 = payload["scenarios"]["S3"]
    assert s3["impls"]["pi_trio"]["checks"] == {"violations": 0, "leaks": 0}
    assert s3["impls"]["floor"]["checks"] == {"violations": 0, "leaks": 0}
    assert s3["ratios"]["abort_to_idle_ms"]["floor"] > 0
    assert s3["ratios"]["abort_to_idle_ms"]["reference"] is None


def test_the_abort_path_breakdown_names_every_step() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.abort_path", "--runs", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    steps = ["tool 1 cancelled", "tool 3 cancelled", "closing events built", "idle"]
    for label in ["pi_trio", "floor", *steps]:
        assert label in done.stdout, (label, done.stdout)
