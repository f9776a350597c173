"""Runs every implementation of every scenario in fresh processes and prints the table.

Repetitions are interleaved (all scenarios and implementations once, then again), so a
noisy stretch of the shared machine hits every column alike. Each figure is the median over
the repetitions, shown with its min and max; the ratios pi_trio/reference and pi_trio/floor are
taken between medians of the same run of this command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from . import _reference
from ._common import median, transcript_violations
from ._spec import BY_ID, IMPLS, SCENARIOS, Figure, Scenario
from ._sweep import run_sweep

ROOT = Path(__file__).resolve().parent.parent
JOB_TIMEOUT = 900.0
FULL_REPS = 5
QUICK_REPS = 1
HEADERS = {"pi_trio": "pi_trio", "floor": "bare-Trio floor", "reference": "pi 0.73.1 (Node)"}


# --- running one job --------------------------------------------------------------------------


def _command(impl: str, params: dict[str, Any], reference: _reference.Reference) -> list[str]:
    if impl == "reference":
        return [*reference.command, json.dumps(params)]
    return [sys.executable, "-m", "benchmarks._child", impl, json.dumps(params)]


def run_job(impl: str, params: dict[str, Any], reference: _reference.Reference) -> dict[str, Any]:
    """One fresh process; its JSON result, or ``{"error": ...}``."""
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    try:
        done = subprocess.run(
            _command(impl, params, reference),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=JOB_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {JOB_TIMEOUT:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"}
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except ValueError:
        return {"error": f"unreadable output: {lines[-1][:200]}"}
    result.setdefault("checks", {})
    transcripts = result.pop("transcripts", None)
    if transcripts is not None:  # the Node harness leaves the transcript check to us
        bad, problems = 0, []
        for item in transcripts:
            found = transcript_violations(item["messages"], allowed_last=item["allowed"])
            if found:
                bad += 1
                problems += found
        result["checks"]["violations"] = bad
        result.setdefault("info", {})["problems"] = problems[:5]
    return result


# --- aggregating ------------------------------------------------------------------------------


def _finite(values: list[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]


def summarise(runs: list[dict[str, Any]], scenario: Scenario) -> dict[str, Any]:
    good = [run for run in runs if "error" not in run]
    figures: dict[str, Any] = {}
    for figure in scenario.figures:
        values = _finite([run["figures"].get(figure.key) for run in good])
        figures[figure.key] = (
            {"median": median(values), "min": min(values), "max": max(values), "n": len(values)}
            if values
            else None
        )
    checks = {
        name: max((int(run["checks"].get(name, 0)) for run in good), default=None)
        for name in scenario.checks
    }
    return {
        "figures": figures,
        "checks": checks,
        "errors": [run["error"] for run in runs if "error" in run],
        "runs": runs,
    }


def _ratio(figures: dict[str, Any], key: str, impl_a: str, impl_b: str) -> float | None:
    a = (figures.get(impl_a) or {}).get(key)
    b = (figures.get(impl_b) or {}).get(key)
    if not a or not b or not b["median"]:
        return None
    return float(a["median"]) / float(b["median"])


# --- the table --------------------------------------------------------------------------------


def _number(value: float, digits: int) -> str:
    if value >= 10_000 and digits == 0:
        return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k"
    return f"{value:,.{digits}f}"


def _cell(summary: dict[str, Any] | None, figure: Figure) -> str:
    if summary is None:
        return "-"
    stats = summary["figures"].get(figure.key)
    if stats is None:
        return "error" if summary["errors"] else "-"
    text = _number(stats["median"], figure.digits)
    if stats["n"] > 1:
        text += f" ({_number(stats['min'], figure.digits)}-{_number(stats['max'], figure.digits)})"
    return text


def _checks_cell(summary: dict[str, Any] | None, names: tuple[str, ...]) -> str:
    if summary is None:
        return "-"
    values = [summary["checks"].get(name) for name in names]
    return " / ".join("?" if v is None else str(v) for v in values)


def render_table(results: dict[str, Any], reference: _reference.Reference) -> str:
    ref_header = HEADERS["reference"] if reference.available else "pi (Node): not run"
    lines = [
        f"| id | figure | pi_trio | {HEADERS['floor']} | {ref_header} | pi_trio/pi | pi_trio/floor "
        "| target |",
        "|----|----|----|----|----|----|----|----|",
    ]
    for scenario_id, entry in results.items():
        scenario = BY_ID[scenario_id]
        impls = entry["impls"]
        first = True
        for figure in scenario.figures:
            arrow = "↓" if figure.better == "lower" else "↑"
            cells = [
                _cell(impls.get(impl), figure) if impl in scenario.impls else "n/a"
                for impl in IMPLS
            ]
            if "reference" in scenario.impls and not reference.available:
                cells[2] = "not run"
            ratios = []
            for other in ("reference", "floor"):
                value = entry["ratios"].get(figure.key, {}).get(other)
                ratios.append(f"{value:.2f}" if figure.ratio and value is not None else "")
            name = f"{scenario.id} {scenario.name}" if first else ""
            lines.append(
                f"| {name} | {figure.label} {arrow} | {' | '.join(cells)} | {' | '.join(ratios)} "
                f"| {figure.target} |"
            )
            first = False
        if scenario.checks:
            cells = [
                _checks_cell(impls.get(impl), scenario.checks) if impl in scenario.impls else "n/a"
                for impl in IMPLS
            ]
            if "reference" in scenario.impls and not reference.available:
                cells[2] = "not run"
            zeros = " / ".join("0" for _ in scenario.checks)
            label = " / ".join(scenario.checks).replace("_", " ")
            lines.append(f"| | {label} | {' | '.join(cells)} | | | {zeros} |")
    return "\n".join(lines)


# --- progress ---------------------------------------------------------------------------------


class Progress:
    """One line on stderr, rewritten in place on a terminal, appended otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.started = time.monotonic()

    def log(self, message: str) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
        sys.stderr.write(message + "\n")
        sys.stderr.flush()

    def start(self, label: str) -> None:
        elapsed = time.monotonic() - self.started
        text = f"[{self.done + 1:>3}/{self.total}] {elapsed:6.1f}s  {label} ..."
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
        else:
            sys.stderr.write(text)
        sys.stderr.flush()

    def finish(self, outcome: str) -> None:
        self.done += 1
        if self.tty:
            sys.stderr.write(" " + outcome)
        else:
            sys.stderr.write(" " + outcome + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _outcome(result: dict[str, Any], scenario: Scenario) -> str:
    if "error" in result:
        return f"ERROR {result['error']}"
    figure = scenario.figures[0]
    value = result["figures"].get(figure.key)
    shown = _number(value, figure.digits) if isinstance(value, int | float) else "?"
    return f"{shown} {figure.label}"


# --- the command ------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="pi_trio's benchmarks S1-S7 beside a bare-Trio floor and pi on Node.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    parser.add_argument("--only", help="scenario ids, e.g. S1,S3 (S7h: S7 over HTTP)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON")
    parser.add_argument("--reps", type=int, help=f"repetitions (default {FULL_REPS}; --quick: 1)")
    parser.add_argument(
        "--impls", default=",".join(IMPLS), help="comma-separated: pi_trio,floor,reference"
    )
    return parser.parse_args(argv)


def select(only: str | None) -> list[Scenario]:
    if not only:
        return list(SCENARIOS)
    items = [item.strip().upper() for item in only.split(",") if item.strip()]
    by_upper = {scenario_id.upper(): scenario_id for scenario_id in BY_ID}  # S7h, S1d...
    wanted = [by_upper.get(item, item) for item in items]
    unknown = [item for item in wanted if item not in BY_ID]
    if unknown:
        raise SystemExit(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(BY_ID)}")
    return [scenario for scenario in SCENARIOS if scenario.id in wanted]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    scenarios = select(args.only)
    impls = [impl for impl in args.impls.split(",") if impl]
    if unknown := set(impls) - set(IMPLS):
        raise SystemExit(f"unknown implementation(s): {', '.join(sorted(unknown))}")
    reps = args.reps or (QUICK_REPS if args.quick else FULL_REPS)
    command = "python -m benchmarks " + " ".join(argv)

    reference = _reference.Reference(False, "not selected")
    if "reference" in impls:
        reference = _reference.prepare(log=lambda m: print(m, file=sys.stderr, flush=True))
        if not reference.available:
            print(f"reference column: {reference.reason}", file=sys.stderr, flush=True)

    jobs: list[tuple[int, Scenario, str]] = []
    for rep in range(reps):
        for scenario in scenarios:
            if scenario.max_reps is not None and rep >= scenario.max_reps:
                continue
            for impl in impls:
                if impl not in scenario.impls or (impl == "reference" and not reference.available):
                    continue
                jobs.append((rep, scenario, impl))

    progress = Progress(len(jobs))
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {s.id: {} for s in scenarios}
    for rep, scenario, impl in jobs:
        total = min(reps, scenario.max_reps or reps)
        progress.start(f"{scenario.id} {scenario.name} · {impl} · run {rep + 1}/{total}")
        params = scenario.params(args.quick)
        if scenario.sweep is None:
            result = run_job(impl, params, reference)
        else:  # one fresh process per size
            result = run_sweep(scenario.sweep, params, partial(run_job, impl, reference=reference))
        runs[scenario.id].setdefault(impl, []).append(result)
        progress.finish(_outcome(result, scenario))
    progress.close()

    results: dict[str, Any] = {}
    for scenario in scenarios:
        impl_summaries = {impl: summarise(r, scenario) for impl, r in runs[scenario.id].items()}
        figures = {impl: s["figures"] for impl, s in impl_summaries.items()}
        ratios = {
            figure.key: {
                other: _ratio(figures, figure.key, "pi_trio", other)
                for other in ("reference", "floor")
            }
            for figure in scenario.figures
        }
        results[scenario.id] = {
            "name": scenario.name,
            "work": scenario.work,
            "params": scenario.params(args.quick),
            "impls": impl_summaries,
            "ratios": ratios,
        }

    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{os.cpu_count()} CPUs, Python {platform.python_version()}, " + (
        f"Node {reference.node}" if reference.available else f"reference: {reference.reason}"
    )
    table = render_table(results, reference)
    print(
        f"{command}\n{date}; {machine}; median (min-max) of {reps} fresh-process runs "
        f"(S7, S7h: at most 3)\n"
    )
    print(table)
    errors = [
        f"{sid} {impl}: {error}"
        for sid, entry in results.items()
        for impl, summary in entry["impls"].items()
        for error in summary["errors"]
    ]
    failed_checks = [
        f"{sid} {impl}: {name} = {value}"
        for sid, entry in results.items()
        for impl, summary in entry["impls"].items()
        for name, value in summary["checks"].items()
        if value
    ]
    for line in errors + failed_checks:
        print(line, file=sys.stderr)
    if args.json:
        payload = {
            "command": command,
            "date": date,
            "machine": machine,
            "quick": args.quick,
            "reps": reps,
            "reference": {
                "available": reference.available,
                "reason": reference.reason,
                "node": reference.node,
            },
            "scenarios": results,
            "table": table,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1, default=_json_default) + "\n")
    return 1 if errors or failed_checks else 0


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(type(value).__name__)
