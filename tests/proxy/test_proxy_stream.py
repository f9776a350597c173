"""pt.stream_proxy against pt.ProxyServer over 127.0.0.1: faux and HTTP upstreams, faults."""

from __future__ import annotations

import http
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import attrs
import httpx
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import MessageBuilder, faux, pool_in_use

from ..providers._bodies import COMPLETIONS
from ..providers._server import SSE, ScriptedServer, Status
from ._endless import Endless
from .conftest import TOKEN, StartProxy

WEATHER = pt.Tool(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def context(text: str = "Hi") -> pt.Context:
    return pt.Context(system_prompt="Be terse.", messages=[pt.UserMessage(text)], tools=[WEATHER])


async def collect(
    stream_fn: pt.StreamFn,
    model: pt.Model,
    ctx: pt.Context | None = None,
    options: pt.StreamOptions | None = None,
) -> list[Any]:
    async with stream_fn(model, ctx or context(), options or pt.StreamOptions()) as events:
        return [event async for event in events]


def final(events: list[Any]) -> pt.AssistantMessage:
    last = events[-1]
    assert isinstance(last, pt.StreamDone | pt.StreamError)
    return last.message if isinstance(last, pt.StreamDone) else last.error


def scripted_reply() -> pt.AssistantMessage:
    return faux.assistant_message(
        [
            faux.thinking("Let me think.", signature="sig-1"),
            faux.text("It is sunny in Paris."),
            faux.tool_call("get_weather", {"city": "Paris", "days": [1, 2]}, id="call_1"),
        ],
        usage=pt.Usage(input=12, output=7, total_tokens=19),
    )


async def check_serving(server: pt.ProxyServer, client: httpx.AsyncClient) -> None:
    """The server still answers a good request (after whatever the test did to it)."""
    reply = faux.FauxModel([faux.assistant_message("still here")])
    saved = server.stream_fn
    server.stream_fn = reply
    try:
        stream = pt.stream_proxy(server.url, TOKEN, http_client=client)
        message = final(await collect(stream, reply.model))
    finally:
        server.stream_fn = saved
    assert message.stop_reason == "stop"
    assert message.content == [pt.TextContent("still here")]


# --- the faux model upstream -----------------------------------------------------------------


async def test_events_and_message_match_a_direct_stream(start_proxy: StartProxy, client) -> None:
    scripted = faux.FauxModel([scripted_reply(), scripted_reply()])
    server = await start_proxy(stream_fn=scripted)
    direct = await collect(scripted, scripted.model)
    proxied = await collect(pt.stream_proxy(server.url, TOKEN, http_client=client), scripted.model)

    assert [e.type for e in proxied] == [e.type for e in direct]
    assert [getattr(e, "content_index", None) for e in proxied] == [
        getattr(e, "content_index", None) for e in direct
    ]
    assert [getattr(e, "delta", None) for e in proxied] == [
        getattr(e, "delta", None) for e in direct
    ]
    got, want = final(proxied), final(direct)
    assert got.content == want.content  # signature and tool arguments included
    assert (got.stop_reason, got.usage) == ("toolUse", want.usage)
    assert (got.api, got.provider, got.model) == ("faux", "faux", "faux-1")
    # every event carries the one live partial message, as with a provider
    assert all(getattr(e, "partial", got) is got for e in proxied)


async def test_request_reaches_upstream_intact(start_proxy: StartProxy, client) -> None:
    scripted = faux.FauxModel([faux.assistant_message("ok")])
    server = await start_proxy(stream_fn=scripted)
    history = [
        pt.UserMessage("What is the weather?"),
        scripted_reply(),
        pt.ToolResultMessage("call_1", "get_weather", [pt.TextContent("sunny")]),
    ]
    ctx = pt.Context(system_prompt="Be terse.", messages=history, tools=[WEATHER])
    options = pt.StreamOptions(
        api_key="client-side-provider-key",
        temperature=0.25,
        max_tokens=99,
        reasoning="high",
        session_id="session-7",
        metadata={"user": "u1"},
        max_retry_delay=2.5,
    )
    await collect(
        pt.stream_proxy(server.url, TOKEN, http_client=client), scripted.model, ctx, options
    )

    (call,) = scripted.calls
    assert pt.to_json(call.context) == pt.to_json(ctx)
    assert call.model == pt.get_model("faux", "faux-1")
    sent = call.options
    assert (sent.temperature, sent.max_tokens, sent.reasoning) == (0.25, 99, "high")
    assert (sent.session_id, sent.metadata, sent.max_retry_delay) == (
        "session-7",
        {"user": "u1"},
        2.5,
    )
    assert sent.api_key is None  # keys are the server's business, never the client's
    assert sent.http_client is server.http_client


async def test_the_server_uses_its_own_model_descriptor(start_proxy: StartProxy, client) -> None:
    scripted = faux.FauxModel([faux.assistant_message("ok")])
    server = await start_proxy(stream_fn=scripted)
    hostile = attrs.evolve(scripted.model, base_url="https://attacker.invalid", headers={"x": "y"})
    await collect(pt.stream_proxy(server.url, TOKEN, http_client=client), hostile)
    assert scripted.calls[0].model == pt.get_model("faux", "faux-1")


async def test_upstream_error_keeps_its_text_and_partial_content(
    start_proxy: StartProxy, client
) -> None:
    failing = faux.assistant_message(
        [faux.text("partial answer")],
        stop_reason="error",
        error_message="HTTP 529 Overloaded: try later",
        usage=pt.Usage(input=3),
    )
    scripted = faux.FauxModel([failing, RuntimeError("refused")])
    server = await start_proxy(stream_fn=scripted)
    stream = pt.stream_proxy(server.url, TOKEN, http_client=client)

    events = await collect(stream, scripted.model)
    message = final(events)
    assert isinstance(events[-1], pt.StreamError) and events[-1].reason == "error"
    assert message.error_message == "HTTP 529 Overloaded: try later"
    assert message.content == [pt.TextContent("partial answer")]
    assert message.usage.input == 3

    events = await collect(stream, scripted.model)
    assert [e.type for e in events] == ["error"]  # no start: the request never got going
    assert final(events).error_message == "refused"


async def test_a_stream_fn_that_raises_becomes_an_error_event(
    start_proxy: StartProxy, client
) -> None:
    def broken(model: pt.Model, ctx: pt.Context, options: pt.StreamOptions) -> Any:
        return aclosing(_raising())

    async def _raising() -> AsyncGenerator[pt.StreamEvent, None]:
        yield MessageBuilder(pt.get_model("faux", "faux-1")).start()
        raise KeyError("oops")

    server = await start_proxy(stream_fn=broken)
    events = await collect(
        pt.stream_proxy(server.url, TOKEN, http_client=client), pt.get_model("faux", "faux-1")
    )
    assert [e.type for e in events] == ["start", "error"]
    assert final(events).error_message == "KeyError: 'oops'"
    await check_serving(server, client)


async def test_token_from_options_when_none_is_configured(start_proxy: StartProxy, client) -> None:
    scripted = faux.FauxModel([faux.assistant_message("ok")])
    server = await start_proxy(stream_fn=scripted)
    stream = pt.stream_proxy(server.url, http_client=client)
    events = await collect(stream, scripted.model, options=pt.StreamOptions(api_key=TOKEN))
    assert final(events).stop_reason == "stop"
    events = await collect(stream, scripted.model)
    assert final(events).error_message == (
        f"Proxy error: no token for the proxy at {server.url}/api/stream"
    )
    assert "SECRET" not in repr(pt.stream_proxy(server.url, TOKEN))


# --- auth and body validation through the client ------------------------------------------------


async def test_bad_token_is_401_and_never_shown(start_proxy: StartProxy, client) -> None:
    scripted = faux.FauxModel([faux.assistant_message("never")])
    server = await start_proxy(stream_fn=scripted)
    wrong = "wrong-token-SECRET-9876543210"
    events = await collect(pt.stream_proxy(server.url, wrong, http_client=client), scripted.model)
    assert [e.type for e in events] == ["error"]
    message = final(events).error_message or ""
    assert message == "Proxy error: HTTP 401 Unauthorized: missing or invalid bearer token"
    assert scripted.call_count == 0
    await check_serving(server, client)


async def test_bad_body_is_400_with_the_path(start_proxy: StartProxy, client) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel())
    bad = pt.Context(messages=[pt.UserMessage([pt.TextContent("x")])])
    body = pt.proxy.request_body(pt.get_model("faux", "faux-1"), bad, pt.StreamOptions())
    body["context"]["messages"][0]["content"][0]["type"] = "img"
    body["options"]["temperature"] = "hot"
    response = await client.post(
        server.url + "/api/stream", json=body, headers={"authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith("invalid request body: ")
    assert "context.messages[0].content[0].type: unknown type 'img'" in error
    assert "options.temperature: expected a number, got string" in error

    unknown = attrs.evolve(pt.get_model("faux", "faux-1"), id="no-such-model")
    events = await collect(pt.stream_proxy(server.url, TOKEN, http_client=client), unknown)
    assert final(events).error_message == (
        "Proxy error: HTTP 400 Bad Request: model: unknown model 'no-such-model' for provider "
        "'faux'; known: faux-1"
    )
    await check_serving(server, client)


async def test_oversized_body_is_413(start_proxy: StartProxy, client) -> None:
    scripted = faux.FauxModel()
    server = await start_proxy(stream_fn=scripted, max_body_bytes=2000)
    big = context("x" * 5000)
    events = await collect(
        pt.stream_proxy(server.url, TOKEN, http_client=client), scripted.model, big
    )
    phrase = http.HTTPStatus(413).phrase  # the interpreter's: "Content Too Large" since 3.13
    assert final(events).error_message == (
        f"Proxy error: HTTP 413 {phrase}: request body larger than 2000 bytes"
    )

    async def chunks() -> AsyncIterator[bytes]:  # no content-length: counted while reading
        for _ in range(10):
            yield b"x" * 500

    response = await client.post(
        server.url + "/api/stream", content=chunks(), headers={"authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 413
    assert scripted.call_count == 0
    await check_serving(server, client)


# --- an openai-completions upstream over HTTP --------------------------------------------------


async def test_http_upstream_text_and_streamed_tool_arguments(
    start_proxy: StartProxy, upstream: ScriptedServer, client, upstream_client
) -> None:
    model = COMPLETIONS.model(upstream.url)
    server = await start_proxy(models=[model])
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.text), SSE(COMPLETIONS.tools))
    stream = pt.stream_proxy(server.url, TOKEN, http_client=client)
    client_model = attrs.evolve(model, base_url="http://wherever.invalid")

    message = final(await collect(stream, client_model))
    assert message.content == [pt.TextContent("Hello world")]
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (8, 5, 2)
    assert message.usage.cost.total == pytest.approx((8 * 1.0 + 5 * 2.0 + 2 * 0.5) / 1e6)

    seen: list[dict[str, Any]] = []
    async with stream(client_model, context(), pt.StreamOptions()) as events:
        async for event in events:
            if isinstance(event, pt.ToolCallDelta):
                call = event.partial.content[event.content_index]
                assert isinstance(call, pt.ToolCall)
                seen.append(dict(call.arguments))
            last = event
    assert {"city": "Pa"} in seen  # parsed while the arguments were still arriving
    assert isinstance(last, pt.StreamDone) and last.reason == "toolUse"
    assert [c.arguments for c in last.message.tool_calls] == [{"city": "Paris"}, {"tz": "UTC"}]
    assert upstream.requests[0].json()["model"] == "test-model"
    assert pool_in_use(client) == 0 and pool_in_use(upstream_client) == 0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            Status(429, {"error": {"message": "slow down"}}, [("retry-after", "120")]),
            "HTTP 429 Too Many Requests: slow down",
        ),
        (Status(500, {"error": {"message": "boom"}}), "HTTP 500 Internal Server Error: boom"),
    ],
    ids=["429", "500"],
)
async def test_http_upstream_errors_arrive_as_error_events(
    start_proxy: StartProxy, upstream: ScriptedServer, client, reply, expected
) -> None:
    model = COMPLETIONS.model(upstream.url)
    server = await start_proxy(models=[model])
    upstream.script(COMPLETIONS.path, reply, SSE(COMPLETIONS.text))
    stream = pt.stream_proxy(server.url, TOKEN, http_client=client)
    events = await collect(stream, model)
    assert [e.type for e in events] == ["error"]
    assert final(events).error_message == expected
    assert final(await collect(stream, model)).content == [pt.TextContent("Hello world")]


async def test_client_disconnect_cancels_the_upstream_request(
    start_proxy: StartProxy, upstream: ScriptedServer, client, upstream_client
) -> None:
    model = COMPLETIONS.model(upstream.url)
    server = await start_proxy(models=[model])
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.text[:2], then="stall"))
    stream = pt.stream_proxy(server.url, TOKEN, http_client=client)
    with trio.fail_after(10):
        async with stream(model, context(), pt.StreamOptions()) as events:
            async for event in events:
                if isinstance(event, pt.TextDelta):
                    break  # leaving the block closes the response to the proxy
        await upstream.wait_for_hangups(1)
    assert pool_in_use(upstream_client) == 0
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.text))
    assert final(await collect(stream, model)).content == [pt.TextContent("Hello world")]


async def test_a_cancelled_client_cancels_the_upstream_stream(
    start_proxy: StartProxy, client
) -> None:
    endless = Endless()
    server = await start_proxy(stream_fn=endless)
    stream = pt.stream_proxy(server.url, TOKEN, http_client=client)
    received: list[str] = []
    with trio.fail_after(10):
        with trio.CancelScope() as scope:
            async with stream(pt.get_model("faux", "faux-1"), context(), None) as events:
                async for event in events:
                    received.append(event.type)
                    if event.type == "text_delta":
                        await endless.reached.wait()
                        scope.cancel(reason="the client stops reading mid-stream")
        await endless.closed.wait()
    assert received == ["start", "text_start", "text_delta"]
    assert isinstance(endless.closed_by, trio.Cancelled)
    assert pool_in_use(client) == 0
    await check_serving(server, client)


async def test_the_time_limit_ends_the_stream_with_an_error(
    start_proxy: StartProxy, upstream: ScriptedServer, client
) -> None:
    model = COMPLETIONS.model(upstream.url)
    server = await start_proxy(models=[model], request_timeout=0.3)
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.text[:2], then="stall"))
    stream = pt.stream_proxy(server.url, TOKEN, http_client=client)
    with trio.fail_after(10):
        events = await collect(stream, model)
        await upstream.wait_for_hangups(1)
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "error"]
    assert final(events).error_message == "the proxy's time limit of 0.3 s ran out"
    assert final(events).content == [pt.TextContent("Hello")]
