"""A protocol line cut off by a cancellation (a client that stopped reading, then a shutdown) is
the last thing written to that connection: no later line is glued onto it."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from pi_trio.cli._lines import StreamLines


async def test_a_line_cut_off_by_a_cancellation_is_the_last_one_sent(autojump_clock: Any) -> None:
    _client, server = trio.testing.lockstep_stream_pair()
    lines = StreamLines(server)
    with trio.move_on_after(1):  # nobody reads: send_all waits, then is cancelled
        await lines.send_line(b'{"type": "message_start"}')
    # before: written, after the cut-off bytes, as one line no client could parse
    with pytest.raises(trio.BrokenResourceError, match="an earlier line was cut off"):
        await lines.send_line(b'{"type": "agent_settled"}')


async def test_lines_sent_whole_leave_the_stream_usable(autojump_clock: Any) -> None:
    client, server = trio.testing.memory_stream_pair()
    lines = StreamLines(server)
    await lines.send_line(b"one")
    await lines.send_line(b"two")
    assert await client.receive_some() == b"one\ntwo\n"
