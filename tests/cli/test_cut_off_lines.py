"""A protocol line cut off by a cancellation (a client that stopped reading, then a shutdown) is
never glued to the next line: that one starts on a line of its own, and the connection goes on.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from pi_trio.cli._lines import StreamLines


class HalfWrites(trio.abc.SendStream):
    """Takes half of a write, then waits for ever (until cancelled): a peer that stopped
    reading. ``whole`` makes writes go through in full."""

    def __init__(self) -> None:
        self.sent = bytearray()
        self.whole = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.whole:  # as Trio's socket: a cancellation is looked for before any byte
            await trio.lowlevel.checkpoint_if_cancelled()
            self.sent += data
            await trio.lowlevel.cancel_shielded_checkpoint()
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


async def test_a_write_cancelled_before_it_began_cuts_nothing(autojump_clock: Any) -> None:
    stream = HalfWrites()
    stream.whole = True
    lines = StreamLines(stream)  # type: ignore[arg-type]
    scope = trio.CancelScope()

    async def update() -> None:
        with scope:
            await lines.send_line(b'{"type": "message_update"}')

    async with trio.open_nursery() as nursery:
        async with lines._send_lock:  # another line being written: update() waits for it
            nursery.start_soon(update)
            await trio.testing.wait_all_tasks_blocked()
        scope.cancel()  # an abort, after the lock went to update() and before it ran
    await lines.send_line(b'{"type": "agent_end"}')
    assert bytes(stream.sent) == b'{"type": "agent_end"}\n'  # no empty line before it
