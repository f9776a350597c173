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
unfinished line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["SSEEvent", "SSEParser"]

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


class SSEEvent:
    """One dispatched event: its ``event`` name, joined ``data``, optional ``id``/``retry``."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(
        self,
        data: str,
        event: str = "message",
        id: str | None = None,
        retry: int | None = None,
    ) -> None:
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"SSEEvent(event={self.event!r}, data={self.data!r}, id={self.id!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SSEEvent):
            return NotImplemented
        return (self.data, self.event, self.id, self.retry) == (
            other.data,
            other.event,
            other.id,
            other.retry,
        )

    __hash__ = None  # type: ignore[assignment]


class SSEParser:
    """Feed body bytes with :meth:`feed`; finish with :meth:`close`.

    Both return the events completed by that call, in order. The parser keeps
    the last event id across events, as the specification asks.
    """

    def __init__(self) -> None:
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
        return list(self._lines(final=False))

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
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\x00" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
        # any other field is ignored, as the specification says
        return None

    def _dispatch(self) -> SSEEvent | None:
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
