"""Line transports for the JSON-lines protocol: stdin/stdout, or a Trio stream (TCP).

A transport is two awaitables: ``receive_line()`` returns the next line without its newline
(``None`` at end of input) and ``send_line(data)`` writes one line. Both transports apply one
rule, :func:`check_line`: a line may hold ``max_line`` bytes (:data:`MAX_LINE`, 16 MiB) not
counting its ``\n`` or ``\r\n``. A longer line raises :class:`LineTooLongError` after the
rest of it has been skipped, so the reader stays in step and the caller can answer with an
error; at most ``max_line`` + 2 bytes of it are held in memory.
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
    "check_line",
]

MAX_LINE = 16 * 1024 * 1024
"""Longest accepted line, in bytes, without its terminator (images travel base64-encoded)."""


class LineTooLongError(Exception):
    """A line exceeded the limit; it has been skipped up to its newline."""


def check_line(line: bytes, max_line: int = MAX_LINE) -> bytes:
    """``line`` without its terminator (``\n``, ``\r\n``, or none at the end of input).

    Raises:
        LineTooLongError: what is left is longer than ``max_line`` bytes.
    """
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    if len(line) > max_line:
        raise LineTooLongError(f"line longer than {max_line} bytes")
    return line


class LineTransport(Protocol):
    async def receive_line(self) -> bytes | None: ...

    async def send_line(self, data: bytes) -> None: ...


class StreamLines:
    """Lines over a :class:`trio.abc.Stream`; ``send_line`` calls are serialised."""

    def __init__(self, stream: trio.abc.Stream, *, max_line: int = MAX_LINE) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._scanned = 0  # no newline in self._buffer[:self._scanned]
        self._max_line = max_line
        self._eof = False
        self._send_lock = trio.Lock()

    async def receive_line(self) -> bytes | None:
        skipping = False
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[: newline + 1])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if skipping:
                    raise LineTooLongError(f"line longer than {self._max_line} bytes")
                return check_line(line, self._max_line)
            self._scanned = len(self._buffer)
            if len(self._buffer) > self._max_line + 1:  # too long even without a "\r"
                skipping = True
                self._buffer.clear()
                self._scanned = 0
            if self._eof:
                if skipping:
                    raise LineTooLongError(f"line longer than {self._max_line} bytes")
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                    return check_line(line, self._max_line)
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
        return check_line(line, self._max_line)

    def _read(self) -> bytes | None:
        line = self._stdin.readline(self._max_line + 2)  # room for the limit and "\r\n"
        if not line:
            return None
        if len(line) > self._max_line + 1 and not line.endswith(b"\n"):
            while True:  # too long even without a "\r": skip the rest of it
                rest = self._stdin.readline(65536)
                if not rest or rest.endswith(b"\n"):
                    break
        return line

    async def send_line(self, data: bytes) -> None:
        self._stdout.write(data + b"\n")
        self._stdout.flush()
        await trio.lowlevel.checkpoint()
