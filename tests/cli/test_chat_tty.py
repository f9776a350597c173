"""``pi-trio chat`` on a real terminal (a pseudo-terminal): line editing and history."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from ._helpers import ROOT, env_without_keys

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


class Terminal:
    """``python -m pi_trio chat`` with a pseudo-terminal as its stdin, stdout and stderr."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        env = env_without_keys()
        env["TERM"] = "xterm"  # GNU readline wants a terminal type; NO_COLOR keeps output plain
        env["NO_COLOR"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_trio", "chat", "--delay", "0"],
            stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.output = b""

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, pattern: str, *, count: int = 1, timeout: float = 20.0) -> None:
        """Wait until ``pattern`` (a regex) appears ``count`` times in what the terminal shows."""
        deadline = time.monotonic() + timeout
        while len(re.findall(pattern.encode(), self.output)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{pattern!r} x{count} not on the terminal: {self.text[-1500:]}"
                )
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                continue
            try:
                self.output += os.read(self.master, 65536)
            except OSError:  # the child closed the terminal
                time.sleep(0.01)

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)


def test_chat_edits_lines_and_recalls_history_on_a_terminal() -> None:
    term = Terminal()
    try:
        term.expect(r"/help")
        # Ctrl-A (start of line) then a fix: readline edits the line before it is sent
        term.type("orld is big\x01w\r")
        term.expect(r"You said: 'world is big'")
        term.type("/help\r")
        term.expect(r"/reset forgets the conversation", count=2)
        # up arrow twice recalls the first line: it is sent again, exactly as edited
        term.type("\x1b[A\x1b[A\r")
        term.expect(r"You said: 'world is big'", count=2)
        term.type("/quit\r")
        code = term.close()
    except BaseException:
        term.proc.kill()
        raise
    assert code == 0, term.text
    # the model was sent the edited line, not what was typed, then the same line again
    assert "You said: 'orld is big" not in term.text
