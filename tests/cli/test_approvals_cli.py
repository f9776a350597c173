"""Approvals in the commands: ``pi-trio chat --approve TOOL`` asks "run name({...})? [y/N]",
``pi-trio sessions pending|approve|deny`` decide from the shell, and ``rpc`` takes
``approve``/``deny`` commands after sending ``tool_approval_request``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.cli._agents import agent_factory
from pi_trio.cli._chat import ChatSession

ROOT = Path(__file__).resolve().parents[2]


async def _chat(agent: pt.Agent, lines: list[str], approve: frozenset[str]) -> str:
    out = io.StringIO()
    script = iter(lines)

    async def read() -> str | None:
        await trio.lowlevel.checkpoint()
        return next(script, None)

    session = ChatSession(agent, out=out, read_line=read, approve_tools=approve)
    assert await session.run(handle_signals=False) == 0
    return out.getvalue()


async def test_chat_asks_before_a_call_of_an_approved_tool(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0)()
    text = await _chat(agent, ["what is 2+3", "y", "what is 4*5", "no"], frozenset({"calculate"}))
    assert 'run calculate({"expression": "2+3"})? [y/N]' in text
    assert "The calculate tool says: 5" in text
    assert "denied by the user: the user said no" in text
    assert "The calculate tool says: 20" not in text


async def test_chat_without_an_answer_leaves_the_call_waiting(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0)()
    text = await _chat(agent, ["what is 2+3"], frozenset({"calculate"}))
    assert "[no answer: the call keeps waiting]" in text
    assert [call.name for call in agent.state.pending_approvals] == ["calculate"]


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_trio", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
def test_a_durable_chat_waits_and_the_shell_approves(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    chat = ["chat", "--session", "s", "--store", store, "--approve", "calculate", "--delay", "0"]
    first = _cli(*chat, stdin="what is 6*7\n")  # end of input at the question
    assert first.returncode == 0, first.stderr
    assert "[no answer: the call keeps waiting]" in first.stdout
    pending = _cli("sessions", "--store", store, "pending")
    (line,) = pending.stdout.splitlines()
    session_id, call_id, call = line.split("\t")
    assert session_id == "s" and call == 'calculate({"expression": "6*7"})'
    approved = _cli("sessions", "--store", store, "approve", "s", call_id)
    assert approved.returncode == 0 and f"approved {call_id}" in approved.stdout
    again = _cli("sessions", "--store", store, "approve", "s", call_id)
    assert again.returncode == 2 and "waits for a decision" in again.stderr
    resumed = _cli(*chat, stdin="")  # the decided call runs as the chat starts
    assert "The calculate tool says: 42" in resumed.stdout, resumed.stdout
    assert _cli("sessions", "--store", store, "pending").stdout == ""


@pytest.mark.slow
def test_rpc_sends_the_request_and_takes_approve_and_deny() -> None:
    commands = [
        {"id": "1", "type": "prompt", "message": "what is 2+3"},
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_trio", "rpc", "--approve", "calculate", "--delay", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdin is not None and process.stdout is not None

    def send(command: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(command) + "\n")
        process.stdin.flush()

    def until(kind: str) -> list[dict[str, Any]]:
        seen = []
        assert process.stdout is not None
        for raw in process.stdout:
            line = json.loads(raw)
            seen.append(line)
            if line["type"] == kind:
                return seen
        raise AssertionError(f"no {kind}: {seen}")

    try:
        for command in commands:
            send(command)
        lines = until("agent_settled")
        request = next(line for line in lines if line["type"] == "tool_approval_request")
        assert request["toolName"] == "calculate" and request["args"] == {"expression": "2+3"}
        send({"id": "2", "type": "deny", "toolCallId": "nope"})
        (reply,) = [line for line in until("response") if line.get("id") == "2"]
        assert not reply["success"] and "no tool call 'nope' waits" in reply["error"]
        send({"id": "3", "type": "approve", "toolCallId": request["toolCallId"]})
        lines = until("agent_settled")
        assert {"id": "3", "type": "response", "command": "approve", "success": True,
                "data": {"disposition": "continued"}} in lines  # fmt: skip
        ends = [line for line in lines if line["type"] == "tool_execution_end"]
        assert ends[0]["result"]["content"][0]["text"] == "5"
    finally:
        process.kill()
        process.wait()


async def test_chat_warns_about_an_approve_name_that_matches_no_tool(autojump_clock: Any) -> None:
    agent = agent_factory("faux", token_delay=0)()
    text = await _chat(agent, ["what is 2+3", "what is 1+1"], frozenset({"calculat"}))
    assert text.count("[--approve calculat: no such tool (clock, calculate") == 1
