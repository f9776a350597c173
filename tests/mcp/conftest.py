"""Real MCP servers for the tests: tools_server.py over stdio (started by the code under test)
and over streamable HTTP on 127.0.0.1 (started here as a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'pi-trio[mcp]'")

SERVER = str(Path(__file__).parent / "servers" / "tools_server.py")
STDIO_ARGS = [SERVER, "stdio"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def eventually(check: Callable[[], bool]) -> None:
    """Until ``check()`` holds: for what another process does (a marker file it writes)."""
    while not check():  # noqa: ASYNC110 - no event to wait on across processes
        await trio.sleep(0.02)


def has_text(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.exists() and path.read_text() == text


class HttpServer:
    """tools_server.py over streamable HTTP, in a subprocess; ``restart()`` keeps the port."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        args = [sys.executable, SERVER, "http", str(self.port)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once the socket listens
        assert line.startswith("PORT "), f"the test server did not start: {line!r}"
        self.port = int(line.split()[1])

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    try:
        yield server
    finally:
        server.stop()
