"""The HTTP layer against a real server on 127.0.0.1: retries, timeouts, errors, the pool."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import httpx
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import (
    MessageBuilder,
    SSEEvent,
    StreamOptions,
    WireRequest,
    pool_in_use,
    redact,
    stream_wire,
)
from pi_trio.providers._http import default_client
from pi_trio.providers._retry import RequestPolicy

from ._server import SSE, Gate, NeverAnswer, ScriptedServer, Status, sse_events

KEY = "sk-test-SECRET-0123456789"
FAST = dict(retry_base_delay=0.001, max_retry_delay=1.0)
MODEL = pt.get_model("faux", "faux-1")


class Raw:
    """The seam's smallest decoder: each event's data becomes a text delta."""

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder

    def feed(self, event: SSEEvent) -> list[pt.StreamEvent]:
        out: list[pt.StreamEvent] = []
        if not self.builder.message.content:
            out.append(self.builder.text_start())
        out.append(self.builder.text_delta(0, event.data))
        return out

    def finish(self) -> list[pt.StreamEvent]:
        return [self.builder.done()]


def source(
    server: ScriptedServer | None,
    client: httpx.AsyncClient,
    *,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    **policy: object,
) -> AsyncGenerator[pt.StreamEvent, None]:
    builder = MessageBuilder(MODEL)
    assert url or server
    request = WireRequest(
        url or f"{server.url}/v1/x",  # type: ignore[union-attr]
        {"authorization": f"Bearer {KEY}"} if headers is None else headers,
        {"hello": "world"},
    )
    return stream_wire(
        builder,
        request,
        Raw(builder),
        StreamOptions(http_client=client),
        [KEY],
        policy=RequestPolicy(**{**FAST, **policy}),  # type: ignore[arg-type]
    )


class Failed(Exception):
    pass


async def drain(src: AsyncGenerator[pt.StreamEvent, None]) -> list[str]:
    """The data of every event; :class:`Failed` with the error_message if the stream failed."""
    out = []
    async with aclosing(src) as events:
        async for event in events:
            if isinstance(event, pt.TextDelta):
                out.append(event.delta)
            elif isinstance(event, pt.StreamError):
                raise Failed(event.error.error_message)
    return out


async def failure(src: AsyncGenerator[pt.StreamEvent, None]) -> str:
    with pytest.raises(Failed) as info:
        await drain(src)
    return str(info.value)


async def test_streams_events_and_sends_body(server, client) -> None:
    server.script("/v1/x", SSE(sse_events({"n": 1}, {"n": 2}, done="[DONE]")))
    assert await drain(source(server, client)) == ['{"n": 1}', '{"n": 2}', "[DONE]"]
    assert server.requests[0].json() == {"hello": "world"}
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert pool_in_use(client) == 0


async def test_500_then_success_is_retried(server, client) -> None:
    server.script("/v1/x", Status(500, {"error": {"message": "boom"}}), SSE(sse_events({"ok": 1})))
    assert await drain(source(server, client)) == ['{"ok": 1}']
    assert len(server.requests) == 2


async def test_429_retry_after_is_honoured(server, client) -> None:
    server.script(
        "/v1/x",
        Status(429, {"error": {"message": "slow down"}}, headers=[("retry-after", "0.05")]),
        SSE(sse_events({"ok": 1})),
    )
    start = trio.current_time()
    assert await drain(source(server, client)) == ['{"ok": 1}']
    assert trio.current_time() - start >= 0.05
    assert len(server.requests) == 2


async def test_retry_after_longer_than_cap_fails_at_once(server, client) -> None:
    server.script(
        "/v1/x", Status(429, {"error": {"message": "quota"}}, headers=[("retry-after", "30")])
    )
    exc = await failure(source(server, client, max_retry_delay=2.0))
    assert "HTTP 429" in exc and "quota" in exc
    assert "retry after 30 s" in exc and "max_retry_delay 2 s" in exc
    assert len(server.requests) == 1


async def test_retries_run_out(server, client) -> None:
    server.script("/v1/x", Status(503, {"error": {"message": "overloaded"}}))
    exc = await failure(source(server, client, max_retries=2))
    assert exc == "HTTP 503 Service Unavailable: overloaded"
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_are_not_retried_and_key_is_redacted(server, client, status) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request"}}
    server.script("/v1/x", Status(status, echo))
    exc = await failure(source(server, client))
    assert exc.startswith(f"HTTP {status} ")
    assert "Incorrect API key provided: *** (invalid_request)" in exc
    assert KEY not in exc
    assert len(server.requests) == 1


async def test_disconnect_mid_stream_after_an_event_is_not_retried(server, client) -> None:
    server.script("/v1/x", SSE(sse_events({"n": 1}), then="disconnect"), SSE(sse_events({"n": 2})))
    async with aclosing(source(server, client)) as events:
        seen = [event async for event in events]
    assert [e.delta for e in seen if isinstance(e, pt.TextDelta)] == ['{"n": 1}']
    assert isinstance(seen[-1], pt.StreamError)
    assert "connection closed by the server" in (seen[-1].error.error_message or "")
    assert len(server.requests) == 1


async def test_disconnect_before_any_event_is_retried(server, client) -> None:
    server.script("/v1/x", SSE([": hi\n\n"], then="disconnect"), SSE(sse_events({"n": 2})))
    assert await drain(source(server, client)) == ['{"n": 2}']


async def test_stall_after_headers_hits_idle_timeout(server, client) -> None:
    server.script("/v1/x", SSE(sse_events({"n": 1}), then="stall"))
    exc = await failure(source(server, client, idle_timeout=0.2))
    assert "timeout: no event from the server for 0.2 s" in exc
    assert pool_in_use(client) == 0


async def test_keepalive_drip_does_not_reset_idle_timeout(server, client) -> None:
    # a comment every 50 ms, forever: bytes keep coming, events never do
    server.script("/v1/x", SSE([": ping\n\n"] * 1000, interval=0.05))
    exc = await failure(source(server, client, idle_timeout=0.3))
    assert "no event from the server for 0.3 s" in exc


async def test_never_answers_hits_first_byte_timeout_then_retries(server, client) -> None:
    server.script("/v1/x", NeverAnswer(), SSE(sse_events({"late": True})))
    assert await drain(source(server, client, first_byte_timeout=0.2)) == ['{"late": true}']
    assert len(server.requests) == 2


async def test_never_answers_and_no_retries_left(server, client) -> None:
    server.script("/v1/x", NeverAnswer())
    exc = await failure(source(server, client, first_byte_timeout=0.1, max_retries=0))
    assert exc == "timeout: no response from the server within 0.1 s"
    assert pool_in_use(client) == 0


async def test_overall_timeout_bounds_retries(server, client) -> None:
    server.script("/v1/x", NeverAnswer())
    exc = await failure(
        source(server, client, first_byte_timeout=0.1, max_retries=50, timeout=0.35)
    )
    assert "timeout" in exc
    assert len(server.requests) <= 4


async def test_connection_refused_is_reported(client) -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there any more
    src = source(None, client, url=f"http://127.0.0.1:{port}/v1/x", headers={}, max_retries=1)
    exc = await failure(src)
    assert exc.startswith("connection to 127.0.0.1 failed: ConnectError")


async def test_cancel_mid_stream_returns_connection(server, client) -> None:
    server.script("/v1/x", SSE(sse_events({"n": 1}), then="stall"))
    with trio.move_on_after(0.2) as scope:
        await drain(source(server, client))
    assert scope.cancelled_caught
    assert pool_in_use(client) == 0


async def test_many_cancelled_requests_leak_nothing(server, http_stack) -> None:
    """encode/httpcore#1093: cancels under pool contention must not strand connections, on
    either stack (httpcore2 under httpx2 has the same pool): 500 staggered cancels."""
    gate = trio.Event()
    server.script("/v1/x", Gate(gate, SSE(sse_events({"n": 1}))))
    limits = http_stack.Limits(max_connections=4, max_keepalive_connections=4)
    async with http_stack.AsyncClient(trust_env=False, limits=limits) as small:

        async def one(delay: float) -> None:
            with trio.move_on_after(delay):
                await drain(source(server, small))

        async with trio.open_nursery() as nursery:
            for i in range(500):
                nursery.start_soon(one, 0.002 * (i % 50))
            await trio.sleep(0.12)
            gate.set()  # the survivors finish, freeing slots while others are cancelled
        assert pool_in_use(small) == 0
        # and the pool still works
        server.script("/v1/x", SSE(sse_events({"after": 1})))
        with trio.fail_after(5):
            assert await drain(source(server, small)) == ['{"after": 1}']


async def test_default_client_is_per_run_and_reused(server) -> None:
    server.script("/v1/x", SSE(sse_events({"n": 1})))
    client = default_client()
    assert default_client() is client
    assert await drain(source(server, client)) == ['{"n": 1}']
    assert not client.is_closed


def test_default_client_is_closed_when_the_run_ends() -> None:
    seen: list[httpx.AsyncClient] = []

    async def main() -> None:
        seen.append(default_client())

    trio.run(main)
    trio.run(main)
    assert seen[0] is not seen[1]
    assert seen[0].is_closed and seen[1].is_closed


def test_redact() -> None:
    assert redact(f"bad key {KEY}!", [KEY, None]) == "bad key ***!"
    assert redact("abc", ["", None]) == "abc"


def test_repr_hides_headers() -> None:
    request = WireRequest("http://127.0.0.1:1/x", {"x-api-key": KEY}, b"")
    assert KEY not in repr(request)


async def test_key_cut_by_the_error_length_limit_is_still_redacted(server, client) -> None:
    body = "x" * 1990 + f" your key {KEY} is invalid"
    server.script("/v1/x", Status(401, body, headers=[("content-type", "text/plain")]))
    problem = await failure(source(server, client))
    assert KEY[:8] not in problem


def test_redact_covers_a_key_with_stray_whitespace() -> None:
    text = "Illegal header value b'Bearer sk-test-SECRET-0123456789\\n'"
    assert "SECRET" not in redact(text, [KEY + "\n"])


async def test_body_that_is_not_the_encoding_it_claims_is_a_clear_failure(server, client) -> None:
    server.script(
        "/v1/x",
        SSE(["not gzip at all"], headers=[("content-encoding", "gzip")]),
    )
    problem = await failure(source(server, client))
    assert problem.startswith("invalid response body")


async def test_cancel_while_queued_in_an_injected_clients_pool_is_prompt(server) -> None:
    """An injected client's pool gets the same admission as the default one: a request
    waiting for a connection is not shielded while it waits."""
    gate = trio.Event()
    server.script("/v1/x", Gate(gate, SSE(sse_events({"n": 1}))), SSE(sse_events({"n": 2})))
    limits = httpx.Limits(max_connections=1)
    async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=None) as one:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain, source(server, one))  # holds the only connection
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(5):  # bounded: before the fix this waited for the gate
                with trio.move_on_after(0.2) as scope:
                    await drain(source(server, one))
            assert scope.cancelled_caught
            gate.set()
        assert pool_in_use(one) == 0
