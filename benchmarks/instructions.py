"""Instructions per unit of work, counted by callgrind: how code is compared (BENCHMARKS.md).

    .venv/bin/python -m benchmarks.instructions [--only S1,S6]

Each figure runs one scenario of :mod:`benchmarks.impl_memory` at two sizes, each in a fresh
``python`` under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``, ``gc.disable()``), and
divides the difference of the two totals by the difference of the sizes: start-up and imports
cancel out, what is left is the cost of one more turn (S1), one more tool call (S2), one more
agent's ten-turn run (S5, per agent-turn) or one more streamed delta (S6). S1d and S5d are
S1 and S5 on a SQLite session store (:mod:`benchmarks.impl_sessions`), the store's thread
included (callgrind runs one thread at a time, so batches differ from a real run's).
Instruction counts are repeatable for the same interpreter and inputs whatever else the
machine does, so a change of 1% is visible where timings move by 20% from run to run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# figure -> (unit, per-unit divisor per size step, small size, large size, the call at a size)
SCENARIOS: dict[str, tuple[str, int, int, int, str]] = {
    "S1": ("turn", 1, 100, 400, "impl.s1_turns({n})"),
    "S2": ("tool call", 1, 100, 400, "impl.s2_fanout({n}, 0.0)"),
    "S5": ("agent-turn", 11, 20, 80, "impl.s5_many_agents({n}, 10)"),
    "S6": ("delta", 1, 5_000, 25_000, "impl.s6_stream({n})"),
    # durable (one SQLite store in a temp dir; the store's thread is counted too)
    "S1d": ("turn", 1, 100, 400, "durable.s1d_durable({n})"),
    "S5d": ("agent-turn", 11, 20, 80, "durable.s5d_durable({n}, 10)"),
}

_PROGRAM = """\
import gc
gc.disable()
import trio
from benchmarks import impl_memory as impl, impl_sessions as durable
trio.run(lambda: {call})
"""

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def count(call: str) -> int:
    """Instructions of one fresh interpreter running ``call`` (a scenario coroutine)."""
    with tempfile.TemporaryDirectory() as scratch:
        completed = subprocess.run(
            [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out",
                sys.executable, "-c", _PROGRAM.format(call=call),
            ],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )  # fmt: skip
    found = _COLLECTED.search(completed.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total:\n{completed.stderr[-2000:]}")
    return int(found.group(1))


def per_unit(figure: str) -> float:
    _, divisor, small, large, call = SCENARIOS[figure]
    low = count(call.format(n=small))
    high = count(call.format(n=large))
    return (high - low) / ((large - small) * divisor)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(SCENARIOS), help="figures, e.g. S1,S6")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    for figure in args.only.split(","):
        unit = SCENARIOS[figure][0]
        print(f"{figure}: {per_unit(figure):,.0f} instructions per {unit}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
