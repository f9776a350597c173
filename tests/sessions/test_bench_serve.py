"""The S9 benchmark (serve_sessions, 1 and 2 worker processes) at a tiny size: its figures are
there, finite and positive, and every turn of every session was measured."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks._spec import BY_ID

pytestmark = pytest.mark.slow  # the S9 benchmark's worker processes

ROOT = Path(__file__).resolve().parents[2]


def test_s9_runs_and_reports_every_figure(postgres_server: str) -> None:
    params = {"scenario": "S9", "sessions": 6, "turns": 3, "concurrency": 4}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks._child", "pi_trio", json.dumps(params)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
        env={"PI_TRIO_TEST_POSTGRES_URL": postgres_server, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    result = json.loads(done.stdout.splitlines()[-1])
    for figure in BY_ID["S9"].figures:
        value = result["figures"][figure.key]
        assert isinstance(value, int | float) and math.isfinite(value) and value > 0, figure.key
    assert result["info"]["turns_measured_1"] == result["info"]["turns_measured_2"] == 6 * 3
