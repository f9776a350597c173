"""Ctrl-C ends every command the same way: one line, status 130, no traceback.

Each command runs in a real subprocess and gets a real SIGINT once it is ready (or in the
middle of a run); a run in progress is aborted first, so its transcript ends in pi's aborted
shape.
"""

from __future__ import annotations

import signal
import sys

import pytest

from ._helpers import Process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")

INTERRUPTED = "pi-trio: interrupted\n"


def interrupt(proc: Process) -> int:
    proc.proc.send_signal(signal.SIGINT)
    return proc.close()


def assert_one_line(proc: Process, code: int, line: str = INTERRUPTED) -> None:
    assert code == 130, proc.error_text
    assert "Traceback" not in proc.error_text
    assert proc.error_text == line


def test_rpc_idle() -> None:
    proc = Process("rpc")
    try:
        proc.write('{"type": "get_state", "id": 1}\n')
        proc.expect('"command":"get_state"')
        proc.proc.send_signal(signal.SIGINT)
        code = proc.proc.wait(15)  # stdin still open: the reader thread is blocked in it
    finally:
        proc.close()
    assert_one_line(proc, code)


def test_rpc_mid_run_aborts_the_run_first() -> None:
    proc = Process("rpc", "--delay", "0.05")
    try:
        proc.write('{"type": "prompt", "id": 1, "message": "tell me a long story"}\n')
        proc.expect('"text_delta"')
        proc.proc.send_signal(signal.SIGINT)
        code = proc.proc.wait(15)
    finally:
        proc.close()
    assert_one_line(proc, code)
    events = proc.json_lines()
    assert events[-1]["type"] == "agent_end"
    assert events[-1]["messages"][-1]["stopReason"] == "aborted"


def test_serve() -> None:
    proc = Process("serve", "--port", "0")
    proc.expect("listening on 127.0.0.1:")
    assert_one_line(proc, interrupt(proc))


def test_proxy() -> None:
    proc = Process("proxy", "--port", "0", "--token", "secret")
    proc.expect("listening on http://127.0.0.1:")
    assert_one_line(proc, interrupt(proc))


def test_demo() -> None:
    proc = Process("demo", "--delay", "0.05")
    proc.expect("Paris")
    assert_one_line(proc, interrupt(proc))


def test_stress() -> None:
    proc = Process("stress", "--demo", "--runs", "3000")
    proc.expect_error("stress: 300/3000", timeout=60)  # the first tenth
    code = interrupt(proc)
    assert code == 130, proc.error_text
    assert "Traceback" not in proc.error_text
    assert proc.error_text.splitlines(keepends=True)[-1] == INTERRUPTED


def test_chat_at_the_prompt_says_bye_on_its_output() -> None:
    proc = Process("chat")
    proc.expect("you> ")
    code = interrupt(proc)
    assert code == 130
    assert proc.text.rstrip().endswith("[Ctrl-C: bye]")
    assert proc.error_text == ""


def test_a_command_that_fails_at_once_raises_its_own_error() -> None:
    from pi_trio.cli._interrupt import run_interruptible

    async def fails() -> None:
        raise TypeError("bad factory")  # before the signal watcher's first step

    with pytest.raises(TypeError, match="bad factory"):
        run_interruptible(fails)
