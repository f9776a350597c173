"""``pi-trio sessions list | show | export`` on a real store file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import pi_trio as pt
from pi_trio.cli import main
from pi_trio.providers import faux

ROOT = Path(__file__).resolve().parents[2]


def _make_store(path: Path) -> None:
    async def fill() -> None:
        scripted = faux.FauxModel([faux.assistant_message("hello there")])
        state = pt.AgentState(model=scripted.model)
        async with (
            pt.open_session_store(path) as store,
            store.open_agent("support-42", initial_state=state, stream_fn=scripted) as agent,
        ):
            await agent.prompt("hi")

    trio.run(fill)


def test_list_show_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "agents.db"
    _make_store(path)
    assert main(["sessions", "--store", str(path), "list"]) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("support-42\t5 entries") and "held by -" in listed

    assert main(["sessions", "--store", str(path), "show", "support-42"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert [line.split()[4] for line in shown] == [
        "state", "run_start", "message", "message", "run_end",
    ]  # fmt: skip
    assert "assistant stop hello there" in shown[3]

    assert main(["sessions", "--store", str(path), "export", "support-42"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["seq"] for e in exported] == [1, 2, 3, 4, 5]
    assert exported[3]["data"]["content"] == [{"type": "text", "text": "hello there"}]
    assert {e["sessionId"] for e in exported} == {"support-42"}


def test_problems_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "agents.db"
    _make_store(path)
    assert main(["sessions", "--store", str(path), "show", "nobody"]) == 2
    assert "no session 'nobody'" in capsys.readouterr().err
    assert main(["sessions", "--store", str(tmp_path / "missing.db"), "list"]) == 2
    assert "no session store at" in capsys.readouterr().err
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database" * 50)
    assert main(["sessions", "--store", str(notes), "list"]) == 2
    assert "is not a pi_trio session store" in capsys.readouterr().err


def _rpc(store: Path, *lines: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "pi_trio", "rpc", "--delay", "0", "--session", "s1",
         "--store", str(store)],
        input="".join(line + "\n" for line in lines), capture_output=True, text=True,
        timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_rpc_session_resumes_in_a_new_process(tmp_path: Path) -> None:
    store = tmp_path / "agents.db"
    first = _rpc(store, '{"type": "prompt", "message": "what is 1 + 1?", "id": 1}')
    assert first[-2]["type"] == "agent_end" and first[-1]["type"] == "agent_settled"
    again = _rpc(store, '{"type": "get_messages", "id": 2}')
    messages = again[0]["data"]["messages"]  # type: ignore[index]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages == first[-2]["messages"]


def test_rpc_with_a_store_keeps_every_session_there(tmp_path: Path) -> None:
    store = tmp_path / "agents.db"
    done = subprocess.run(
        [sys.executable, "-m", "pi_trio", "rpc", "--delay", "0", "--store", str(store)],
        input='{"type": "get_state", "id": 1}\n{"type": "new_session", "id": 2}\n'
        '{"type": "get_state", "id": 3}\n',
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    first, second = replies[1]["data"]["sessionId"], replies[3]["data"]["sessionId"]
    assert first != second
    listed = subprocess.run(
        [sys.executable, "-m", "pi_trio", "sessions", "--store", str(store), "list"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=True,
    )  # fmt: skip
    assert {line.split("\t")[0] for line in listed.stdout.splitlines()} == {first, second}
