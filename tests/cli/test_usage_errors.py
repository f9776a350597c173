"""Mistakes on the command line are one line that names the fix, found before any work starts;
a reader of stdout that goes away (``| head``) ends the command quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pi_trio.cli import main
from pi_trio.cli._models import CliError, resolve_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["demo", "--delay", "abc"], "argument --delay: 'abc' is not a number of seconds"),
        (["serve", "--port", "http"], "argument --port: 'http' is not a port number"),
    ],
)
def test_a_value_of_the_wrong_kind_is_named(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "_delay" not in err and "_port" not in err


def test_a_report_path_that_cannot_be_written_is_refused_before_the_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["stress", "--demo", "--runs", "100000", "--json", "/nonexistent/r.json"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "pi-trio: error: --json /nonexistent/r.json: its folder does not exist "
        "(checked before the runs)\n"
    )


def test_a_local_server_under_its_own_name_needs_only_its_url() -> None:
    model = resolve_model("llama.cpp/qwen3-8b", "http://127.0.0.1:8080/v1")
    assert (model.provider, model.id, model.api) == ("llama.cpp", "qwen3-8b", "openai-completions")
    assert model.base_url == "http://127.0.0.1:8080/v1"
    with pytest.raises(CliError, match=r"add --base-url http://host:port/v1"):
        resolve_model("llama.cpp/qwen3-8b")


def test_the_demo_whose_reader_went_away_ends_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_trio", "demo", "--delay", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)  # the first bytes, then the reader goes away, like | head -c 10
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0, err
    assert err == ""


class _GoneAfter:
    """A stdout whose reader goes away after ``lines`` lines."""

    def __init__(self, lines: int) -> None:
        self.left = lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= text.count("\n")
        return len(text)

    def flush(self) -> None:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")


async def _two_sessions(path: Path) -> None:
    import pi_trio as pt

    async with pt.open_session_store(path) as store:
        for name in ("a", "b"):
            async with store.open_agent(name):
                pass


def test_sessions_list_piped_to_head_ends_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import trio

    store = tmp_path / "s.db"
    trio.run(_two_sessions, store)
    monkeypatch.setattr(sys, "stdout", _GoneAfter(1))
    assert main(["sessions", "--store", str(store), "list"]) == 0
    assert capsys.readouterr().err == ""
