"""``pi-trio stress MODULE:FACTORY``: :func:`pi_trio.testing.stress` from the command line.

Loads a zero-argument agent factory (``package.module:make_agent`` or ``path/file.py:make``,
imported with the current directory on ``sys.path``, like ``python -m``), or the scripted
``--demo`` one, stresses it with a progress line on stderr (redrawn in place on a terminal,
a line per tenth of the runs otherwise), prints the report's table on stdout, optionally writes
the report as JSON and a latency histogram (matplotlib, the ``plot`` extra), and exits 1 when
any run broke an invariant.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..testing import AgentFactory, StressProgress, StressReport, demo_agent, stress
from ._interrupt import run_interruptible
from ._models import CliError

__all__ = ["add_parser", "load_factory", "run_command"]

DEMO = "pi_trio.testing:demo_agent"


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def add_parser(commands: Any) -> None:
    """Add the ``stress`` subcommand to ``commands`` (the parser's subparsers)."""
    sub = commands.add_parser(
        "stress", help="abort your agent at random moments and check every invariant"
    )
    sub.add_argument(
        "factory",
        nargs="?",
        metavar="MODULE:FACTORY",
        help="a function returning a fresh pt.Agent, e.g. myapp.agents:make_agent or "
        "path/to/file.py:make_agent",
    )
    sub.add_argument("--demo", action="store_true", help=f"stress the scripted demo ({DEMO})")
    sub.add_argument("--prompt", default="Go.", help="the prompt of every run (default 'Go.')")
    sub.add_argument("--runs", type=_positive, default=2000, help="aborted runs (default 2000)")
    sub.add_argument("--seed", type=int, help="seed of the abort moments (default: random)")
    sub.add_argument(
        "--abort",
        choices=("random", "deadline", "both"),
        default="random",
        help="agent.abort() at a random moment, a trio.move_on_after deadline, or both",
    )
    sub.add_argument("--concurrency", type=_positive, default=1, help="runs at once (default 1)")
    sub.add_argument("--window", type=float, help="seconds to draw moments in (skips calibration)")
    sub.add_argument("--only-run", type=int, metavar="N", help="run only run N (to reproduce it)")
    sub.add_argument(
        "--max-latency",
        type=float,
        default=1000.0,
        metavar="MS",
        help="abort->idle above this is a violation (default 1000 ms)",
    )
    sub.add_argument(
        "--allow-errors", action="store_true", help="runs ending in an error are not violations"
    )
    sub.add_argument("--json", metavar="FILE", help="write the report as JSON")
    sub.add_argument("--plot", metavar="FILE.png", help="draw the latency histogram (matplotlib)")


def load_factory(spec: str) -> AgentFactory:
    """The callable ``spec`` ("module:attr" or "file.py:attr") names.

    Raises:
        CliError: saying what is wrong with ``spec`` or what failed to import.
    """
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise CliError(f"{spec!r}: expected MODULE:FACTORY, e.g. myapp.agents:make_agent")
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise CliError(f"{module_name}: no such file")
            loaded = importlib.util.spec_from_file_location(path.stem, path)
            assert loaded is not None and loaded.loader is not None
            module = importlib.util.module_from_spec(loaded)
            sys.modules[path.stem] = module
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise CliError(f"{module_name} has no {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise CliError(f"{spec} is not callable: it must be a function returning a pt.Agent")
    factory: AgentFactory = target
    return factory


class ProgressLine:
    """Renders :class:`StressProgress` on ``stream``: in place on a terminal, else by tenths."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._shown = -1.0
        self._step = 0
        self.last: StressProgress | None = None

    def __call__(self, progress: StressProgress) -> None:
        self.last = progress
        fraction = progress.done / progress.total if progress.total else 1.0
        eta = "-" if progress.eta is None else f"{progress.eta:.0f} s"
        text = (
            f"{progress.done}/{progress.total} runs, {progress.violations} violations, "
            f"{progress.elapsed:.1f} s, ETA {eta}"
        )
        if self.tty:
            now = time.monotonic()
            if now - self._shown < 0.1 and progress.done < progress.total:
                return
            self._shown = now
            filled = int(fraction * 24)
            bar = "#" * filled + "." * (24 - filled)
            self.stream.write(f"\r[{bar}] {text}\x1b[K")
            if progress.done == progress.total:
                self.stream.write("\n")
        else:
            step = math.floor(fraction * 10)
            if step <= self._step and progress.done < progress.total:
                return
            self._step = step
            self.stream.write(f"stress: {text}\n")
        self.stream.flush()


def run_command(args: argparse.Namespace) -> int:
    """Run ``pi-trio stress``; returns 0 when no run broke an invariant, else 1."""
    if args.demo == bool(args.factory):
        raise CliError("give either MODULE:FACTORY or --demo")
    factory: AgentFactory = demo_agent if args.demo else load_factory(args.factory)
    name = DEMO if args.demo else args.factory
    if args.only_run is not None and (args.seed is None or args.window is None):
        raise CliError("--only-run needs the --seed and --window of the report it reproduces")
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path and not Path(path).resolve().parent.is_dir():
            raise CliError(f"{option} {path}: its folder does not exist (checked before the runs)")

    seed = random.randrange(2**32) if args.seed is None else args.seed
    progress = ProgressLine(sys.stderr)

    async def main() -> StressReport:
        return await stress(
            factory, args.prompt, runs=max(args.runs, (args.only_run or 0) + 1), seed=seed,
            abort=args.abort, concurrency=args.concurrency, progress=progress,
            window=args.window, only_run=args.only_run,
            max_abort_latency=args.max_latency / 1000, allow_errors=args.allow_errors,
        )  # fmt: skip

    try:
        result = run_interruptible(main, message=None)
    except TypeError as exc:
        if not str(exc).startswith("make_agent() must return"):
            raise
        raise CliError(f"{name}: {exc}") from None
    if isinstance(result, int):  # Ctrl-C: what was done, then the usual line
        done = progress.last
        if done is not None:
            if progress.tty:
                sys.stderr.write("\n")
            print(
                f"stress: {done.done} of {done.total} runs done, {done.violations} violations "
                f"(seed {seed})",
                file=sys.stderr,
            )
        print("pi-trio: interrupted", file=sys.stderr, flush=True)
        return result
    report = result
    print(f"pi-trio stress {name} (prompt {args.prompt!r})")
    print(report.summary())
    aborted = [violation for violation in report.violations if violation.run >= 0]
    if aborted:
        first = aborted[0]
        again = (
            f"pi-trio stress {'--demo' if args.demo else name} --seed {report.seed}"
            f" --window {report.window!r} --only-run {first.run}"
            f" --abort {'deadline' if first.mode == 'deadline' else 'random'}"
        )
        print(f"rerun the first violation: {again}")
    elif report.violations:
        print("the unaborted calibration runs broke an invariant: every run will")
    if args.json:
        data = {"factory": name, "prompt": args.prompt, **report.to_json()}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    if args.plot:
        _plot(report, name, args.plot, print_error=lambda text: print(text, file=sys.stderr))
    return 1 if report.violations else 0


def _plot(report: StressReport, name: str, path: str, print_error: Callable[[str], None]) -> None:
    """Draw the abort->idle histogram into ``path`` (or say how to get matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print_error("--plot needs matplotlib: pip install 'pi-trio[plot]' (no picture drawn)")
        return
    latencies = [value * 1e3 for value in report.latencies]
    figure, axes = plt.subplots(figsize=(7, 3.2), dpi=100)
    if latencies:
        axes.hist(latencies, bins=60, color="#4c72b0")
        for q, style in ((50, "-"), (99, "--")):
            value = report.latency(q) * 1e3
            axes.axvline(value, color="#c44e52", linestyle=style, label=f"p{q} {value:.3f} ms")
        axes.legend()
    axes.set_xlabel("abort -> idle (ms)")
    axes.set_ylabel("runs")
    axes.set_title(
        f"{name}: {report.mid_run} aborts mid-run of {report.runs}, "
        f"{len(report.violations)} violations",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
