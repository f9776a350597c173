"""Ctrl-C ends every command the same way: one line, status 130, no traceback.

Each command runs in a real subprocess and gets a real SIGINT once it is ready (or in the
middle of a run); a run in progress is aborted first, so its transcript ends in pi's aborted
shape.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ._helpers import Process, env_without_keys

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX"),
    pytest.mark.slow,  # a CLI process per test, interrupted
]

INTERRUPTED = "pi-trio: interrupted\n"


def interrupt(proc: Process) -> int:
    proc.proc.send_signal(signal.SIGINT)
    return proc.close()


def assert_one_line(proc: Process, code: int, *, after_log: bool = False) -> None:
    """Status 130, no traceback, and one line; after the server's own log lines if asked."""
    assert code == 130, proc.error_text
    assert "Traceback" not in proc.error_text
    if after_log:
        assert proc.error_text.splitlines(keepends=True)[-1] == INTERRUPTED
        assert proc.error_text.count("interrupted") == 1
    else:
        assert proc.error_text == INTERRUPTED


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
    assert events[-2]["type"] == "agent_end"
    assert events[-2]["messages"][-1]["stopReason"] == "aborted"
    assert events[-1] == {"type": "agent_settled", "aborted": True}  # what a client waits for


def test_serve() -> None:
    proc = Process("serve", "--port", "0")
    proc.expect("listening on 127.0.0.1:")
    assert_one_line(proc, interrupt(proc))


def test_serve_mid_run_aborts_each_connection_run_first() -> None:
    proc = Process("serve", "--port", "0", "--delay", "0.05")
    at = proc.expect("listening on 127.0.0.1:")
    port = int(proc.text[at:].split()[0])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=15) as sock,
        sock.makefile("rwb") as stream,
    ):
        stream.write(b'{"type": "prompt", "id": 1, "message": "tell me a long story"}\n')
        stream.flush()
        lines = []
        for line in stream:
            lines.append(json.loads(line))
            if lines[-1].get("type") == "message_update":
                proc.proc.send_signal(signal.SIGINT)
                break
        lines += [json.loads(line) for line in stream]  # until the server closes it
    assert_one_line(proc, proc.close(), after_log=True)  # "connection from ..." comes first
    assert lines[-2]["type"] == "agent_end"
    assert lines[-2]["messages"][-1]["stopReason"] == "aborted"
    assert lines[-1] == {"type": "agent_settled", "aborted": True}


def test_proxy() -> None:
    proc = Process("proxy", "--port", "0", "--token", "secret")
    proc.expect("listening on http://127.0.0.1:")
    assert_one_line(proc, interrupt(proc))


def test_demo() -> None:
    proc = Process("demo", "--delay", "0.05")
    proc.expect("Paris")
    assert_one_line(proc, interrupt(proc))


def test_stress_says_what_was_done_before_it_stopped() -> None:
    proc = Process("stress", "--demo", "--runs", "3000", "--seed", "7")
    proc.expect_error("stress: 300/3000", timeout=60)  # the first tenth
    assert_one_line(proc, interrupt(proc), after_log=True)  # after the progress lines
    summary = proc.error_text.splitlines()[-2]
    assert summary.startswith("stress: "), proc.error_text
    assert summary.endswith("of 3000 runs done, 0 violations (seed 7)"), summary
    assert int(summary.split()[1]) >= 300


def test_chat_at_the_prompt_says_bye_on_its_output() -> None:
    proc = Process("chat")
    proc.expect("you> ")
    proc.proc.send_signal(signal.SIGINT)
    code = proc.proc.wait(15)  # stdin still open
    proc.close()
    assert code == 130
    assert proc.text.rstrip().endswith("[Ctrl-C: bye]")
    assert proc.error_text == ""


def test_a_command_that_fails_at_once_raises_its_own_error() -> None:
    from pi_trio.cli._interrupt import run_interruptible

    async def fails() -> None:
        raise TypeError("bad factory")  # before the signal watcher's first step

    with pytest.raises(TypeError, match="bad factory"):
        run_interruptible(fails)


SLOW_IMPORT = """
import sys, time
class _Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "pi_trio":
            sys.stderr.write("loading pi_trio\\n")
            sys.stderr.flush()
            time.sleep(30)
        return None
sys.meta_path.insert(0, _Slow())
"""


def test_while_the_library_is_still_loading(tmp_path) -> None:
    """The console script's first module holds a quiet handler until pi_trio is imported."""
    script = Path(sys.executable).with_name("pi-trio")
    if not script.exists():
        pytest.fail(f"{script} is missing: install the package (pip install -e .)")
    (tmp_path / "sitecustomize.py").write_text(SLOW_IMPORT)  # pi_trio's import blocks
    env = env_without_keys() | {"PYTHONPATH": str(tmp_path)}
    proc = subprocess.Popen(
        [str(script), "demo"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert proc.stderr is not None
    assert proc.stderr.readline() == b"loading pi_trio\n"
    proc.send_signal(signal.SIGINT)
    output, errors = proc.communicate(timeout=15)
    assert (proc.returncode, errors.decode(), output) == (130, INTERRUPTED, b"")
