"""Helpers for the command-line tests: a JSON-lines client and a subprocess driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

import pi_trio as pt
from pi_trio.cli._agents import agent_factory
from pi_trio.cli._lines import StreamLines
from pi_trio.cli._rpc import RpcSession
from pi_trio.cli._rpc_sessions import MemorySessions

ROOT = Path(__file__).resolve().parents[2]


SESSION_EVENTS = ("agent_settled", "queue_update", "thinking_level_changed")
"""pi's RPC lines that are events of its agent session, not of its agent core."""
NOT_AGENT_EVENTS = ("response", "error", "message_update", *SESSION_EVENTS)
"""Lines :func:`pt.from_json` does not read as a ``pt.AgentEvent``: responses, errors, the
session events, and ``message_update`` (pi's RPC writes it without the partial message)."""


def rpc_session(agent: pt.Agent, transport: Any) -> RpcSession:
    """An :class:`RpcSession` whose first (in-memory) session runs ``agent``."""
    return RpcSession(MemorySessions(agent_factory("faux", token_delay=0), agent), transport)


class JsonLinesClient:
    """The client side of the rpc protocol over a Trio stream."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.lines = StreamLines(stream)
        self.seen: list[dict[str, Any]] = []

    async def send(self, command: dict[str, Any] | bytes) -> None:
        data = command if isinstance(command, bytes) else json.dumps(command).encode()
        await self.lines.send_line(data)

    async def receive(self) -> dict[str, Any]:
        line = await self.lines.receive_line()
        assert line is not None, "the server closed the connection"
        item = json.loads(line)
        if item["type"] not in NOT_AGENT_EVENTS:
            pt.from_json(item, pt.AgentEvent)  # every agent event is pi's JSON
        self.seen.append(item)
        return item  # type: ignore[no-any-return]

    async def until(self, predicate: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Everything received up to and including the first item matching ``predicate``."""
        items = []
        while True:
            item = await self.receive()
            items.append(item)
            if predicate(item):
                return items

    async def response(self, request_id: Any) -> dict[str, Any]:
        items = await self.until(lambda i: i["type"] == "response" and i.get("id") == request_id)
        return items[-1]

    async def command(self, command: dict[str, Any]) -> dict[str, Any]:
        await self.send(command)
        return await self.response(command.get("id"))


def is_type(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda item: item["type"] == kind


def is_text_delta(item: dict[str, Any]) -> bool:
    return (
        item["type"] == "message_update" and item["assistantMessageEvent"]["type"] == "text_delta"
    )


def env_without_keys() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NO_COLOR", None)
    return env


class Process:
    """A ``python -m pi_trio`` subprocess with piped stdio, read by a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_trio", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env_without_keys(),
        )
        self.output = b""
        self.errors = b""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_errors, daemon=True)
        self._err_reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 65536):
            with self._lock:
                self.output += chunk

    def _read_errors(self) -> None:
        assert self.proc.stderr is not None
        while chunk := os.read(self.proc.stderr.fileno(), 65536):
            with self._lock:
                self.errors += chunk

    @property
    def error_text(self) -> str:
        """What the process wrote on stderr so far (all of it after :meth:`close`)."""
        with self._lock:
            return self.errors.decode(errors="replace")

    def expect_error(self, marker: str, *, timeout: float = 15.0) -> None:
        """Wait until ``marker`` appears on stderr."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.error_text:
                return
            if self.proc.poll() is not None and not self._err_reader.is_alive():
                break
            time.sleep(0.01)
        raise AssertionError(f"{marker!r} not on stderr: {self.error_text[-2000:]}")

    def write(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def expect(self, marker: str, *, start: int = 0, timeout: float = 15.0) -> int:
        """Wait until ``marker`` appears in the output after ``start``; its end offset."""
        deadline = time.monotonic() + timeout
        needle = marker.encode()
        while time.monotonic() < deadline:
            with self._lock:
                found = self.output.find(needle, start)
            if found >= 0:
                return found + len(needle)
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.01)
        raise AssertionError(f"{marker!r} not in output: {self.text[-2000:]}")

    @property
    def text(self) -> str:
        with self._lock:
            return self.output.decode(errors="replace")

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines() if line.strip()]

    def close(self, timeout: float = 15.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        self._err_reader.join(5)
        return code
