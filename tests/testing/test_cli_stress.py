"""``pi-trio stress`` as a user runs it: subprocesses on the real clock."""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pi_trio.cli import main
from pi_trio.cli._stress import ProgressLine
from pi_trio.testing import StressProgress

from ..cli._helpers import ROOT, env_without_keys

pytestmark = pytest.mark.slow  # stress runs of hundreds of aborts, in a CLI process

LEAKY = """
import trio
import pi_trio as pt

async def _linger():
    await trio.sleep(0.2)

async def leak(tool_call_id, params, on_update):
    trio.lowlevel.spawn_system_task(_linger)
    await trio.sleep(0.02)
    return pt.ToolResult([pt.TextContent("done")])

def make():
    model = pt.faux.FauxModel(
        [pt.faux.assistant_message([pt.faux.tool_call("leak", {}, id="c1")]),
         pt.faux.assistant_message("bye")],
    )
    tool = pt.AgentTool("leak", "Leak", "leaks a task", {"type": "object"}, leak)
    return pt.Agent(pt.AgentState(model=model.model, tools=[tool]), stream_fn=model)
"""


def stress(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_trio", "stress", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env_without_keys(),
        cwd=cwd,
    )


def test_the_demo_survives_500_aborts(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = stress("--demo", "--runs", "500", "--seed", "1", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^violations +0$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^runs +500 ", done.stdout, re.MULTILINE)
    assert "stress: 500/500 runs, 0 violations" in done.stderr  # the progress lines
    data = json.loads(out.read_text())
    assert data["factory"] == "pi_trio.testing:demo_agent" and data["runs"] == 500
    assert data["violations"] == [] and data["leaked_tasks"] == 0
    assert data["mid_run_aborts"] == data["abort_to_idle_s"]["count"] > 0


def test_a_factory_whose_tool_leaks_a_task_fails_and_reruns(tmp_path: Path) -> None:
    (tmp_path / "leaky.py").write_text(LEAKY)
    report = tmp_path / "report.json"
    done = stress(
        "leaky.py:make", "--runs", "10", "--seed", "7", "--json", str(report), cwd=tmp_path
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^leaked tasks +[1-9]", done.stdout, re.MULTILINE), done.stdout
    assert "still alive after wait_for_idle(): leaky._linger" in done.stdout
    data = json.loads(report.read_text())
    aborted = [v for v in data["violations"] if v["run"] >= 0]
    rerun = re.search(r"^rerun the first violation: (.*)$", done.stdout, re.MULTILINE)
    assert rerun is not None, done.stdout
    argv = shlex.split(rerun.group(1))
    window = repr(data["window_s"])
    first = str(aborted[0]["run"])
    assert argv == [
        "pi-trio", "stress", "leaky.py:make", "--seed", "7", "--window", window,
        "--only-run", first, "--abort", "random",
    ]  # fmt: skip
    # on the real clock, rerun one whose abort lands well after the tool leaked (at once)
    late = next(v for v in aborted if v["moment_s"] > 0.005)
    argv[argv.index("--only-run") + 1] = str(late["run"])
    again = stress(*argv[2:], cwd=tmp_path)
    assert again.returncode == 1, again.stdout
    assert re.search(r"^runs +1 ", again.stdout, re.MULTILINE)
    assert "leaky._linger" in again.stdout


def test_the_plot_is_drawn_or_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    picture = tmp_path / "latency.png"
    argv = ["stress", "--demo", "--runs", "10", "--plot", str(picture)]
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were missing
        assert main(argv) == 0
    assert "pip install 'pi-trio[plot]'" in capsys.readouterr().err and not picture.exists()
    pytest.importorskip("matplotlib")
    assert main(argv) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either MODULE:FACTORY or --demo"),
        (("nocolon",), "expected MODULE:FACTORY"),
        (("no_such_module_here:make",), "cannot import no_such_module_here"),
        (("json:no_such_name",), "json has no 'no_such_name'"),
        (("json:__doc__",), "is not callable"),
        (
            ("json:JSONDecoder", "--runs", "1"),
            "must return a pt.Agent (a fresh one per run), not JSONDecoder",
        ),
        (("--demo", "--only-run", "3"), "--only-run needs the --seed and --window"),
    ],
)
def test_usage_errors_are_one_line_and_status_2(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stress", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_redraws_on_a_terminal_and_prints_tenths_otherwise() -> None:
    plain, terminal = io.StringIO(), _Terminal()
    lines, redraw = ProgressLine(plain), ProgressLine(terminal)
    for done in range(1, 101):
        progress = StressProgress(done, 100, done // 50, done * 0.01, (100 - done) * 0.01)
        lines(progress)
        redraw(progress)
    printed = plain.getvalue().splitlines()
    assert len(printed) == 10 and printed[-1].startswith("stress: 100/100 runs, 2 violations")
    drawn = terminal.getvalue()
    assert drawn.startswith("\r[") and drawn.endswith(
        "100/100 runs, 2 violations, 1.0 s, ETA 0 s\x1b[K\n"
    )
    assert "\n" not in drawn[:-1]  # redrawn in place
