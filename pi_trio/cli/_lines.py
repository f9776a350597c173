"""Line transports for the JSON-lines protocol: stdin/stdout, or a Trio stream (TCP).

A transport is two awaitables: ``receive_line()`` returns the next line without its newline
(``None`` at end of input) and ``send_line(data)`` writes one line. Lines longer than
``max_line`` raise :class:`LineTooLongError` after the rest of the line has been skipped, so
the reader stays in step and the caller can answer with an error.
"""

from __future__ import annotations

import sys
from typing import BinaryIO, Protocol

import trio

__all__ = [
    "MAX_LINE",
    "LineTooLongError",
    "LineTransport",
    "StdioLines",
    "StreamLines",
]

MAX_LINE = 16 * 1024 * 1024
"""Longest accepted line, in bytes (images travel base64-encoded inside prompts)."""


class LineTooLongError(Exception):
    """A line exceeded the limit; it has been skipped up to its newline."""


class LineTransport(Protocol):
    async def receive_line(self) -> bytes | None: ...

    async def send_line(self, data: bytes) -> None: ...


class StreamLines:
    """Lines over a :class:`trio.abc.Stream`; ``send_line`` calls are serialised."""

    def __init__(self, stream: trio.abc.Stream, *, max_line: int = MAX_LINE) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._max_line = max_line
        self._eof = False
        self._send_lock = trio.Lock()

    async def receive_line(self) -> bytes | None:
        skipping = False
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                if skipping:
                    raise LineTooLongError(f"line longer than {self._max_line} bytes")
                return line.rstrip(b"\r")
            if len(self._buffer) > self._max_line:
                skipping = True
                self._buffer.clear()
            if self._eof:
                if skipping:
                    raise LineTooLongError(f"line longer than {self._max_line} bytes")
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line.rstrip(b"\r")
                return None
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                self._eof = True
            self._buffer += chunk

    async def send_line(self, data: bytes) -> None:
        async with self._send_lock:
            await self._stream.send_all(data + b"\n")


class StdioLines:
    """Lines over the process's stdin/stdout (pipes, files or a terminal).

    Reading happens in a worker thread (``abandon_on_cancel=True``), which works for every
    kind of stdin, regular files included; writing is a short blocking write and flush.
    """

    def __init__(
        self,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        *,
        max_line: int = MAX_LINE,
    ) -> None:
        self._stdin = stdin if stdin is not None else sys.stdin.buffer
        self._stdout = stdout if stdout is not None else sys.stdout.buffer
        self._max_line = max_line

    async def receive_line(self) -> bytes | None:
        line = await trio.to_thread.run_sync(self._read, abandon_on_cancel=True)
        if line is None:
            return None
        if len(line) > self._max_line:
            raise LineTooLongError(f"line longer than {self._max_line} bytes")
        return line.rstrip(b"\r\n")

    def _read(self) -> bytes | None:
        line = self._stdin.readline(self._max_line + 1)
        if not line:
            return None
        if len(line) > self._max_line and not line.endswith(b"\n"):
            while True:  # skip the rest of the oversized line
                rest = self._stdin.readline(65536)
                if not rest or rest.endswith(b"\n"):
                    break
        return line

    async def send_line(self, data: bytes) -> None:
        self._stdout.write(data + b"\n")
        self._stdout.flush()
        await trio.lowlevel.checkpoint()
