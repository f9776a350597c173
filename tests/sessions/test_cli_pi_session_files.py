"""``pi-trio sessions import FILE [--id ID]`` and ``export ID --format pi [-o FILE]`` end to
end: a pi 1.6 session file in, a file pi 1.6 opens out, and one-line errors (status 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.cli import main

from ..pi_node import pi_session_context
from .test_pi_session_files import RECORDED


def _logged(store: Path, session_id: str) -> list[object]:
    async def load() -> list[object]:
        async with pt.open_session_store(store) as opened:
            return [e.data for e in await opened.load(session_id) if e.kind == "message"]

    return trio.run(load)


def test_import_then_export_as_a_pi_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "agents.db"  # import creates the store
    assert main(["sessions", "--store", str(store), "import", str(RECORDED), "--id", "s1"]) == 0
    assert capsys.readouterr().out == f"imported {RECORDED} as session s1\n"
    logged = _logged(store, "s1")  # (that this is pi's context: test_pi_session_files)
    assert [m["role"] for m in logged][:2] == ["compactionSummary", "user"]  # type: ignore[index]

    out = tmp_path / "s1.jsonl"
    argv = ["sessions", "--store", str(store), "export", "s1", "--format", "pi", "-o", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().out == f"exported session s1 to {out}\n"
    assert pi_session_context(out)["messages"] == logged

    # to stdout: the same file's text
    assert main(["sessions", "--store", str(store), "export", "s1", "--format", "pi"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == "s1"
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["type"] for e in lines] == [e["type"] for e in written]

    # the log format stays the default
    assert main(["sessions", "--store", str(store), "export", "s1"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["kind"] == "state"


def test_the_import_takes_the_files_own_id_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "agents.db"
    assert main(["sessions", "--store", str(store), "import", str(RECORDED)]) == 0
    header = json.loads(RECORDED.read_text().splitlines()[0])
    assert capsys.readouterr().out.endswith(f"as session {header['id']}\n")


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1  # one line, no traceback
    return captured.err


def test_errors_are_one_line_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "agents.db")
    assert main(["sessions", "--store", store, "import", str(RECORDED), "--id", "s"]) == 0
    capsys.readouterr()
    again = _error(["sessions", "--store", store, "import", str(RECORDED), "--id", "s"], capsys)
    assert "session 's' already exists" in again and "--id" in again
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    refused = _error(["sessions", "--store", store, "import", str(bad)], capsys)
    assert f"{bad}, line 1: not a pi session file" in refused
    missing = _error(["sessions", "--store", store, "import", str(tmp_path / "no.jsonl")], capsys)
    assert "No such file or directory" in missing and "no.jsonl" in missing

    out = tmp_path / "taken.jsonl"
    out.write_text("mine\n")
    export = ["sessions", "--store", store, "export", "s", "--format", "pi", "-o", str(out)]
    assert "--overwrite" in _error(export, capsys)
    assert out.read_text() == "mine\n"
    assert main([*export, "--overwrite"]) == 0
    assert json.loads(out.read_text().splitlines()[0])["type"] == "session"
    capsys.readouterr()
    unknown = _error(["sessions", "--store", store, "export", "nope", "--format", "pi"], capsys)
    assert "no session 'nope'" in unknown
    # only import creates a store
    other = str(tmp_path / "other.db")
    assert "no session store" in _error(["sessions", "--store", other, "export", "s"], capsys)
