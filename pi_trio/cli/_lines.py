"""Line transports for the JSON-lines protocol: stdin/stdout, or a Trio stream (TCP).

A transport is two awaitables: ``receive_line()`` returns the next line without its newline
(``None`` at end of input) and ``send_line(data)`` writes one line. Both transports apply one
rule, :func:`check_line`: a line may hold ``max_line`` bytes (:data:`MAX_LINE`, 16 MiB) not
counting its ``\n`` or ``\r\n``. A longer line raises :class:`LineTooLongError` after the
rest of it has been skipped, so the reader stays in step and the caller can answer with an
error; at most ``max_line`` + 2 bytes of it are held in memory.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import BinaryIO, Protocol

import trio

__all__ = [
    "MAX_LINE",
    "LineTooLongError",
    "LineTransport",
    "StdioLines",
    "StreamLines",
    "ThreadReader",
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
    """Lines over a :class:`trio.abc.Stream`; ``send_line`` calls are serialised.

    A receive-only stream is fine when ``send_line`` is never called (:class:`StdioLines`).
    """

    def __init__(
        self, stream: trio.abc.Stream | trio.abc.ReceiveStream, *, max_line: int = MAX_LINE
    ) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._scanned = 0  # no newline in self._buffer[:self._scanned]
        self._max_line = max_line
        self._eof = False
        self._send_lock = trio.Lock()
        self._cut = False

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
        """Write ``data`` and a newline.

        A line whose write was cancelled may have been cut off (Trio: the stream's state is
        unknown): the next line then starts with a newline of its own, so that it is never
        glued onto the cut-off one (a reader sees one bad line, or an empty one, before it).
        """
        assert isinstance(self._stream, trio.abc.SendStream), "a receive-only stream"
        async with self._send_lock:
            line = b"\n" + data + b"\n" if self._cut else data + b"\n"
            # a cancellation before any byte goes out leaves nothing cut (Trio's socket
            # checks for one first too, with no yield in between)
            await trio.lowlevel.checkpoint_if_cancelled()
            self._cut = True  # until the whole line is out
            await self._stream.send_all(line)
            self._cut = False


class ThreadReader(trio.abc.ReceiveStream):
    """A receive stream over a blocking ``read(max_bytes)``, run in a worker thread.

    The thread is abandoned on cancellation (``abandon_on_cancel=True``): it works for every
    kind of input (pipes, terminals, regular files) and cancels at once. On the process's
    stdin it reads the file descriptor with ``os.read``, never through ``sys.stdin.buffer``: an
    abandoned thread blocked inside the buffered reader holds its lock, and the interpreter
    aborts at exit ("could not acquire lock ... daemon threads") when it finds it held. Bytes
    an abandoned read returns later are lost, so cancel a reader only when done with it.
    """

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read

    @classmethod
    def stdin(cls) -> ThreadReader:
        """A reader of file descriptor 0 (no Python-level buffer, no lock)."""
        return cls(functools.partial(os.read, 0))

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await trio.to_thread.run_sync(self._read, max_bytes or 65536, abandon_on_cancel=True)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class StdioLines:
    """Lines over the process's stdin/stdout (pipes, files or a terminal).

    Reading goes through a :class:`ThreadReader` (``stdin``'s ``read1``, or file descriptor 0
    by default) and the same framing as :class:`StreamLines`; writing is a short blocking
    write and flush.
    """

    def __init__(
        self,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        *,
        max_line: int = MAX_LINE,
    ) -> None:
        reader = ThreadReader.stdin() if stdin is None else ThreadReader(stdin.read1)  # type: ignore[attr-defined]
        self._lines = StreamLines(reader, max_line=max_line)
        self._stdout = stdout if stdout is not None else sys.stdout.buffer

    async def receive_line(self) -> bytes | None:
        return await self._lines.receive_line()

    async def send_line(self, data: bytes) -> None:
        self._stdout.write(data + b"\n")
        self._stdout.flush()
        await trio.lowlevel.checkpoint()
