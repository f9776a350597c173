"""One line-length rule for ``pi-trio rpc`` (stdio) and ``pi-trio serve`` (TCP), at its boundary.

A line may hold ``MAX_LINE`` (16 MiB) bytes, not counting its ``\\n`` or ``\\r\\n``; a longer
one is answered with an error and skipped, and the session reads on in step.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import trio

from pi_trio.cli._agents import agent_factory
from pi_trio.cli._lines import MAX_LINE, StdioLines
from pi_trio.cli._rpc import serve_tcp_rpc

from ._helpers import JsonLinesClient, rpc_session

TOO_LONG = f"line longer than {MAX_LINE} bytes"


def get_state_line(size: int, request_id: int) -> bytes:
    """A ``get_state`` command of exactly ``size`` bytes (padded with an ignored field)."""
    head = b'{"type":"get_state","id":%d,"pad":"' % request_id
    tail = b'"}'
    line = head + b"x" * (size - len(head) - len(tail)) + tail
    assert len(line) == size
    return line


LINES = [
    get_state_line(MAX_LINE - 1, 1),
    get_state_line(MAX_LINE, 2),
    get_state_line(MAX_LINE + 1, 3),
    get_state_line(100, 4),
]


def check_answers(answers: list[dict[str, Any]]) -> None:
    assert [a.get("id") for a in answers] == [1, 2, None, 4]
    assert [a["success"] for a in answers] == [True, True, False, True]
    assert answers[2]["error"] == f"Failed to parse command: {TOO_LONG}"
    assert answers[2]["command"] == "parse"


async def stdio_answers(terminator: bytes) -> list[dict[str, Any]]:
    stdin = io.BytesIO(b"".join(line + terminator for line in LINES))
    stdout = io.BytesIO()
    agent = agent_factory("faux", token_delay=0)()
    await rpc_session(agent, StdioLines(stdin, stdout)).run()
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


async def tcp_answers(terminator: bytes, nursery: trio.Nursery) -> list[dict[str, Any]]:
    make_agent = agent_factory("faux", token_delay=0)
    listeners = await nursery.start(serve_tcp_rpc, make_agent, 0, "127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = JsonLinesClient(await trio.open_tcp_stream("127.0.0.1", port))
    answers = []
    for line in LINES:
        await client.lines._stream.send_all(line + terminator)
        answers.append(await client.receive())
    await client.lines._stream.aclose()
    return answers


@pytest.mark.parametrize("terminator", [b"\n", b"\r\n"], ids=["lf", "crlf"])
async def test_stdio_takes_a_line_of_exactly_the_limit(terminator: bytes) -> None:
    check_answers(await stdio_answers(terminator))


@pytest.mark.parametrize("terminator", [b"\n", b"\r\n"], ids=["lf", "crlf"])
async def test_serve_refuses_a_line_one_byte_over_the_limit(
    terminator: bytes, nursery: trio.Nursery
) -> None:
    check_answers(await tcp_answers(terminator, nursery))


async def test_a_last_line_without_newline_follows_the_same_rule() -> None:
    for size, ok in ((MAX_LINE, True), (MAX_LINE + 1, False)):
        stdin = io.BytesIO(get_state_line(size, 1))
        stdout = io.BytesIO()
        await rpc_session(agent_factory("faux", token_delay=0)(), StdioLines(stdin, stdout)).run()
        [answer] = [json.loads(line) for line in stdout.getvalue().splitlines()]
        assert answer["success"] is ok
