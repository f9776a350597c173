"""pt.ProxyServer over raw HTTP: auth, routing, limits, CORS, the event encoding."""

from __future__ import annotations

import json
import logging
from typing import Any

import attrs
import httpx
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import MessageBuilder, faux

from ..providers._bodies import COMPLETIONS
from ..providers._server import SSE, ScriptedServer
from .conftest import TOKEN, StartProxy

MODEL = pt.get_model("faux", "faux-1")
AUTH = {"authorization": f"Bearer {TOKEN}"}


def body(**changes: Any) -> dict[str, Any]:
    data = pt.proxy.request_body(
        MODEL, pt.Context(messages=[pt.UserMessage("Hi", timestamp=1)]), pt.StreamOptions()
    )
    data.update(changes)
    return data


async def post(client: httpx.AsyncClient, server: pt.ProxyServer, **kwargs: Any) -> httpx.Response:
    kwargs.setdefault("json", body())
    return await client.post(server.url + "/api/stream", **kwargs)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": TOKEN},
        {"authorization": f"Basic {TOKEN}"},
        {"authorization": f"Bearer {TOKEN}x"},
        {"authorization": f"Bearer {TOKEN[:-1]}"},
        {"authorization": "Bearer"},
    ],
    ids=["missing", "no-scheme", "basic", "longer", "shorter", "empty"],
)
async def test_anything_but_the_token_is_401(start_proxy: StartProxy, client, headers) -> None:
    scripted = faux.FauxModel()
    server = await start_proxy(stream_fn=scripted)
    response = await post(client, server, headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "missing or invalid bearer token"}
    assert response.headers["www-authenticate"] == "Bearer"
    assert scripted.call_count == 0


async def test_the_event_stream_is_pis_sse(start_proxy: StartProxy, client) -> None:
    reply = faux.assistant_message("Hi there", usage=pt.Usage(input=1, output=2, total_tokens=3))
    server = await start_proxy(stream_fn=faux.FauxModel([reply]))
    response = await post(client, server, headers={"authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    blocks = response.text.split("\n\n")
    assert blocks[-1] == ""
    lines = blocks[:-1]
    assert all(line.startswith("data: ") and "\n" not in line for line in lines)
    events = [json.loads(line[len("data: ") :]) for line in lines]
    usage = pt.to_json(pt.Usage(input=1, output=2, total_tokens=3))
    assert events == [
        {"type": "start"},
        {"type": "text_start", "contentIndex": 0},
        {"type": "text_delta", "contentIndex": 0, "delta": "Hi "},
        {"type": "text_delta", "contentIndex": 0, "delta": "there"},
        {"type": "text_end", "contentIndex": 0},
        {"type": "done", "reason": "stop", "usage": usage},
    ]


async def test_routing_and_methods(start_proxy: StartProxy, client) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel())
    response = await client.post(server.url + "/api/other", json=body(), headers=AUTH)
    assert (response.status_code, response.json()) == (
        404,
        {"error": "not found; the proxy serves POST /api/stream"},
    )
    response = await client.get(server.url + "/api/stream", headers=AUTH)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    response = await client.options(server.url + "/api/stream")
    assert response.status_code == 405  # no CORS configured: no preflight either


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"{", "invalid JSON body: Expecting property name enclosed in double quotes"),
        (b"[1]", "invalid request body: (root): expected an object"),
        (json.dumps({"context": {"messages": []}}).encode(), "model: required field missing"),
        (
            json.dumps(body(model={**pt.to_json(MODEL), "contextWindow": "big"})).encode(),
            "model.contextWindow: expected an integer, got string",
        ),
    ],
    ids=["json", "not-object", "missing-model", "bad-field"],
)
async def test_bad_bodies_are_400(start_proxy: StartProxy, client, content, error) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel())
    response = await post(client, server, json=None, content=content, headers=AUTH)
    assert response.status_code == 400
    assert error in response.json()["error"]


async def test_unknown_api_of_a_trusted_model_is_400(start_proxy: StartProxy, client) -> None:
    server = await start_proxy(trust_client_models=True)
    model = attrs.evolve(MODEL, api="carrier-pigeon")
    response = await post(client, server, json=body(model=pt.to_json(model)), headers=AUTH)
    assert response.status_code == 400
    assert response.json()["error"].startswith("model.api: no provider for api 'carrier-pigeon'")


async def test_models_limit_what_is_served(start_proxy: StartProxy, client) -> None:
    served = attrs.evolve(MODEL, id="house-model")
    server = await start_proxy(stream_fn=faux.FauxModel(), models=[served])
    response = await post(client, server, headers=AUTH)
    assert response.status_code == 400
    assert response.json() == {
        "error": "model: faux/faux-1 is not served here; served: faux/house-model"
    }


async def test_a_slow_request_is_dropped(start_proxy: StartProxy) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel(), header_timeout=0.2)
    assert server.bound_port is not None
    with trio.fail_after(5):
        # headers never finished: the connection is closed without an answer
        stream = await trio.open_tcp_stream("127.0.0.1", server.bound_port)
        await stream.send_all(b"POST /api/stream HTTP/1.1\r\nhost: x\r\n")
        assert await stream.receive_some(1000) == b""
        await stream.aclose()
        # a body that never arrives: 408
        stream = await trio.open_tcp_stream("127.0.0.1", server.bound_port)
        head = f"POST /api/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n"
        await stream.send_all(f"{head}content-length: 100\r\n\r\n{{".encode())
        reply = b""
        while chunk := await stream.receive_some(1000):
            reply += chunk
        await stream.aclose()
    assert reply.startswith(b"HTTP/1.1 408 ")
    assert reply.endswith(b'{"error": "request not received in time"}')


async def test_garbage_is_not_fatal(start_proxy: StartProxy, client) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel([faux.assistant_message("fine")]))
    assert server.bound_port is not None
    with trio.fail_after(5):
        stream = await trio.open_tcp_stream("127.0.0.1", server.bound_port)
        await stream.send_all(b"\x00\x01 not http at all\r\n\r\n")
        while await stream.receive_some(1000):
            pass
        await stream.aclose()
    response = await post(client, server, headers=AUTH)
    assert response.status_code == 200 and '"delta":"fine"' in response.text


async def test_cors_preflight_and_headers(start_proxy: StartProxy, client) -> None:
    server = await start_proxy(
        stream_fn=faux.FauxModel([faux.assistant_message("ok")]),
        cors_origins=["https://app.example"],
    )
    origin = {"origin": "https://app.example"}
    response = await client.options(server.url + "/api/stream", headers=origin)
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in response.headers["access-control-allow-headers"]
    response = await post(client, server, headers={**AUTH, **origin})
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    response = await post(client, server, headers={"origin": "https://evil.example"})
    assert response.status_code == 401
    assert "access-control-allow-origin" not in response.headers


def test_every_stream_event_encodes_to_a_valid_proxy_event() -> None:
    builder = MessageBuilder(MODEL)
    events: list[pt.StreamEvent] = [builder.start()]
    events += [builder.thinking_start(), builder.thinking_delta(0, "hm")]
    builder.message.content[0].redacted = True  # type: ignore[union-attr]
    events.append(builder.thinking_end(0, "sig"))
    events += [builder.text_start(), builder.text_delta(1, "a"), builder.text_end(1, "ts")]
    events += [builder.tool_call_start("c", "f"), builder.tool_call_delta(2, "{}")]
    ended = builder.tool_call_end(2)
    ended.tool_call.thought_signature = "g"
    events += [ended, builder.done(), builder.error("bad", "aborted")]
    encoded = [pt.proxy.encode_event(e) for e in events]
    decoded = [pt.from_json(e, pt.proxy.ProxyEvent) for e in encoded]
    assert [d.type for d in decoded] == [e.type for e in events]
    assert [pt.to_json(d) for d in decoded] == encoded  # the records are the schema
    assert encoded[3] == {
        "type": "thinking_end",
        "contentIndex": 0,
        "contentSignature": "sig",
        "redacted": True,
    }
    assert encoded[-1]["errorMessage"] == "bad" and encoded[-1]["reason"] == "aborted"


def test_a_token_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pt.proxy.TOKEN_ENV_VAR, raising=False)
    with pytest.raises(pt.PiError, match="PI_TRIO_PROXY_TOKEN"):
        pt.proxy.run_proxy_server(port=0)
    assert "SECRET" not in repr(pt.ProxyServer(token=TOKEN))


async def test_serve_proxy_and_run_proxy_server_entry_points(client) -> None:
    async with trio.open_nursery() as nursery:
        url = await nursery.start(pt.serve_proxy, TOKEN)
        assert url.startswith("http://127.0.0.1:")
        response = await client.post(url + "/api/stream", json=body())
        assert response.status_code == 401
        nursery.cancel_scope.cancel()


async def test_expect_100_continue_is_answered(start_proxy: StartProxy) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel([faux.assistant_message("ok")]))
    assert server.bound_port is not None
    payload = json.dumps(body()).encode()
    head = (
        f"POST /api/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n"
        f"content-length: {len(payload)}\r\nexpect: 100-continue\r\n\r\n"
    )
    with trio.fail_after(5):
        stream = await trio.open_tcp_stream("127.0.0.1", server.bound_port)
        await stream.send_all(head.encode())
        assert (await stream.receive_some(1000)).startswith(b"HTTP/1.1 100 ")
        await stream.send_all(payload)
        reply = b""
        while chunk := await stream.receive_some(1000):
            reply += chunk
        await stream.aclose()
    assert reply.startswith(b"HTTP/1.1 200 ") and b'"type":"done"' in reply


async def test_keys_come_from_get_api_key(
    start_proxy: StartProxy, upstream: ScriptedServer, client
) -> None:
    model = COMPLETIONS.model(upstream.url)
    asked: list[str] = []

    async def get_api_key(provider: str) -> str:
        asked.append(provider)
        if len(asked) > 1:
            raise RuntimeError("key vault down: sk-never-shown")
        return "sk-server-side-key"

    server = await start_proxy(models=[model], get_api_key=get_api_key)
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.text))
    request = body(model=pt.to_json(model))
    response = await post(client, server, json=request, headers=AUTH)
    assert response.status_code == 200
    assert upstream.requests[0].headers["authorization"] == "Bearer sk-server-side-key"
    response = await post(client, server, json=request, headers=AUTH)
    assert (response.status_code, response.json()) == (
        500,
        {"error": "upstream setup failed: RuntimeError"},
    )
    assert asked == ["openai", "openai"]


def _json_parses(levels: int) -> bool:
    """Whether this interpreter's json reads ``levels`` nested arrays (3.13's does 5,000)."""
    try:
        json.loads("[" * levels + "]" * levels)
    except RecursionError:
        return False
    return True


def _deep_details(levels: int) -> bytes:
    message = pt.to_json(pt.ToolResultMessage("c1", "t", [], details="@", timestamp=1))
    data = json.dumps(body(context={"messages": [message]}))
    return data.replace('"@"', "[" * levels + "]" * levels).encode()


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON body: nested too deeply to parse"),
        (
            json.dumps(body(context={"messages": "@"}))
            .replace('"@"', "[" * 5000 + "]" * 5000)
            .encode(),
            # Python 3.13's json parses 5,000 levels (3.11's and 3.12's stop first): the wire
            # then refuses the first message
            "invalid request body: context.messages[0]: expected an object, got array"
            if _json_parses(5000)
            else "invalid JSON body: nested too deeply to parse",
        ),
        (
            _deep_details(500),
            "invalid request body: context.messages[0].details"
            + "[0]" * 64
            + ": nested deeper than 64 arrays/objects",
        ),
    ],
    ids=["100k-arrays", "messages-5000-deep", "details-500-deep"],
)
async def test_a_deeply_nested_body_is_400(
    start_proxy: StartProxy, client, caplog: pytest.LogCaptureFixture, content, error
) -> None:
    scripted = faux.FauxModel([faux.assistant_message("fine")])
    server = await start_proxy(stream_fn=scripted)
    response = await post(client, server, json=None, content=content, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert scripted.call_count == 0
    assert (await post(client, server, headers=AUTH)).status_code == 200  # still serving
