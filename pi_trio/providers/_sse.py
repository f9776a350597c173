"""Incremental Server-Sent Events parser: bytes in, events out.

Every wire API in pi_trio streams its answer as ``text/event-stream``. This
module turns the raw body bytes, in whatever pieces the network delivers them,
into :class:`SSEEvent` records, following the WHATWG "event stream
interpretation" rules:

* lines end in CRLF, LF or a lone CR, and a line ending may be split across
  two chunks (a chunk that ends in CR waits for the next one before deciding);
* ``data:`` lines accumulate (joined with ``\\n``), a blank line dispatches;
* lines starting with ``:`` are comments (keep-alives) and produce nothing;
* ``event:`` names the event, ``id:`` and ``retry:`` are kept as given;
* one optional space after the colon is removed; a leading BOM is ignored.

The parser is pure (no I/O, no Trio), so the HTTP layer owns timeouts and the
tests can feed it arbitrary chunkings. Work per call is proportional to the
bytes fed plus the events produced: the buffer only ever holds the current
unfinished line. Memory is bounded: a line or an event (its lines together) longer than
``max_event_bytes`` raises :class:`SSELimitError` as soon as the parser sees it, so an
endless line costs at most that much plus one chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SSEEvent", "SSELimitError", "SSEParser"]

DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@attrs.frozen
class SSEEvent:
    """One dispatched event: its ``event`` name, joined ``data``, optional ``id``/``retry``."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSELimitError(ValueError):
    """A line or an event longer than the parser's ``max_event_bytes``."""


class SSEParser:
    """Feed body bytes with :meth:`feed`; finish with :meth:`close`.

    Both return the events completed by that call, in order. The parser keeps
    the last event id across events, as the specification asks.

    Args:
        max_event_bytes: the longest line, and the most bytes of lines in one event, accepted.

    Raises:
        SSELimitError: from :meth:`feed` or :meth:`close` when a limit is exceeded.
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        self._event_bytes = 0  # bytes of the lines of the event being collected
        self._buffer = bytearray()
        self._scanned = 0  # leading bytes of the buffer already known to hold no line end
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self.last_event_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume ``chunk`` and return the events it completed."""
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []  # could still be the start of a BOM
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
            self._started = True
        events = list(self._lines(final=False))
        if len(self._buffer) > self.max_event_bytes:
            raise SSELimitError(
                f"a line longer than {self.max_event_bytes} bytes (max_event_bytes) "
                "without a line end"
            )
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a trailing unterminated line is processed, but an
        event without its blank line is discarded (the specification's rule)."""
        events = list(self._lines(final=True))
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._scanned = 0
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        self._data.clear()
        self._event = ""
        self._event_bytes = 0
        return events

    def _lines(self, final: bool) -> Iterator[SSEEvent]:
        buffer = self._buffer
        pos = 0
        start = self._scanned  # a long line arriving in many chunks is scanned once
        try:
            while True:
                match = _LINE_END.search(buffer, max(pos, start))
                if match is None:
                    break
                if match.group() == b"\r" and match.end() == len(buffer) and not final:
                    break  # a CRLF may be split across chunks: wait for the next byte
                line = bytes(buffer[pos : match.start()])
                pos = match.end()
                event = self._process_line(line)
                if event is not None:
                    yield event
        finally:
            del buffer[:pos]
            # what is left has no line end, except perhaps a CR waiting for its LF
            self._scanned = len(buffer) - 1 if buffer.endswith(b"\r") else len(buffer)

    def _process_line(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            return None  # comment / keep-alive
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._event_bytes += len(raw)
            if self._event_bytes > self.max_event_bytes:
                raise SSELimitError(
                    f"an event larger than {self.max_event_bytes} bytes (max_event_bytes)"
                )
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\x00" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isascii() and value.isdigit():  # not "²"
            self._retry = int(value)
        # any other field is ignored, as the specification says
        return None

    def _dispatch(self) -> SSEEvent | None:
        self._event_bytes = 0
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self.last_event_id,
            retry=self._retry,
        )
        self._data = []
        self._event = ""
        return event
