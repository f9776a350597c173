"""A protocol line cut off by a cancellation (a client that stopped reading, then a shutdown) is
never glued to the next line: that one starts on a line of its own, and the connection goes on.
"""

from __future__ import annotations

from typing import Any

import trio

from pi_trio.cli._lines import StreamLines


class HalfWrites(trio.abc.SendStream):
    """Takes half of a write, then waits for ever (until cancelled): a peer that stopped
    reading. ``whole`` makes writes go through in full."""

    def __init__(self) -> None:
        self.sent = bytearray()
        self.whole = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.whole:
            self.sent += data
            await trio.lowlevel.checkpoint()
            return
        self.sent += bytes(data)[: len(data) // 2]
        await trio.sleep_forever()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_the_line_after_a_cut_off_one_starts_on_its_own(autojump_clock: Any) -> None:
    stream = HalfWrites()
    lines = StreamLines(stream)  # type: ignore[arg-type]
    first = b'{"type": "message_start", "pad": "xxxxxxxx"}'
    with trio.move_on_after(1):
        await lines.send_line(first)
    stream.whole = True
    await lines.send_line(b'{"type": "agent_settled"}')
    await lines.send_line(b'{"type": "next"}')
    # before: '{"type": "message_start", "pa{"type": "agent_settled"}' as one line
    assert bytes(stream.sent).split(b"\n") == [
        (first + b"\n")[: (len(first) + 1) // 2],
        b'{"type": "agent_settled"}',
        b'{"type": "next"}',
        b"",
    ]
