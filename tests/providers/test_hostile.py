"""Hostile or broken servers, against the real scripted server: what the user is told.

A 200 that is not an event stream, an endless SSE line, and API keys echoed back in every
encoding or leaking into DEBUG logs.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from typing import Any

import httpx
import pytest

import pi_trio as pt

from ._bodies import COMPLETIONS
from ._server import SSE, ScriptedServer, Status, sse_events

# a '/' and a '+' so that the JSON-escaped and URL-encoded forms differ from the raw key
KEY = "sk-live/MARKER+0123456789abcdef"
MARKER = "MARKER"
NGINX = b"""<!DOCTYPE html>
<html>
<head><title>Welcome to nginx!</title></head>
<body><h1>Welcome to nginx!</h1><p>If you see this page, the nginx web server works.</p></body>
</html>
"""
PATH = COMPLETIONS.path


async def run(
    server: ScriptedServer, client: httpx.AsyncClient, api_key: str = KEY, **options: Any
) -> pt.AssistantMessage:
    model = COMPLETIONS.model(server.url)
    options.setdefault("max_retries", 0)
    opts = pt.StreamOptions(api_key=api_key, http_client=client, **options)
    return await pt.complete_simple(model, pt.Context("sys", [pt.UserMessage("hi")]), opts)


def error_of(message: pt.AssistantMessage) -> str:
    assert message.stop_reason == "error", message
    assert message.error_message
    return message.error_message


async def test_a_200_html_page_is_reported_as_not_an_event_stream(server, client) -> None:
    server.script(PATH, Status(200, NGINX, content_type="text/html"))
    text = error_of(await run(server, client))
    assert text.startswith("HTTP 200 OK is not an event stream")
    assert "expected text/event-stream, got text/html" in text
    assert "Welcome to nginx!" in text


async def test_a_200_json_error_shows_the_servers_own_text(server, client) -> None:
    body = {"error": {"message": "model 'llama3' not loaded", "type": "unavailable_error"}}
    server.script(PATH, Status(200, body))
    text = error_of(await run(server, client))
    assert "expected text/event-stream, got application/json" in text
    assert "model 'llama3' not loaded (unavailable_error)" in text


async def test_an_event_stream_with_parameters_is_accepted(server, client) -> None:
    chunks = COMPLETIONS.text
    headers = [("content-type", "text/event-stream; charset=utf-8")]
    server.script(PATH, SSE(chunks, headers=headers))
    assert (await run(server, client)).stop_reason == "stop"


async def test_an_endless_line_is_cut_at_max_event_bytes(server, client) -> None:
    cap = 256 * 1024
    piece = b"x" * 65536
    # one line four times the cap long, then the connection stays open and silent: without
    # a cap the client would buffer it all and wait for the idle timeout
    server.script(PATH, SSE([b"data: ", *[piece] * 16], then="stall"))
    text = error_of(await run(server, client, max_event_bytes=cap, idle_timeout=30.0))
    assert f"a line longer than {cap} bytes (max_event_bytes)" in text
    assert "StreamOptions.max_event_bytes" in text


async def test_an_event_of_many_lines_is_cut_at_max_event_bytes(server, client) -> None:
    cap = 64 * 1024
    line = "data: " + "y" * 1000 + "\n"
    server.script(PATH, SSE([line * 100], then="stall"))  # ~100 KB, never a blank line
    text = error_of(await run(server, client, max_event_bytes=cap, idle_timeout=30.0))
    assert f"an event larger than {cap} bytes" in text


def encodings(key: str) -> dict[str, str]:
    escaped = json.dumps(key)[1:-1].replace("/", "\\/")
    return {
        "json \\/": escaped,
        "json \\u00xx": "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in key),
        "url": urllib.parse.quote(key, safe=""),
    }


@pytest.mark.parametrize("encoding", ["json \\/", "json \\u00xx", "url"])
async def test_an_echoed_key_is_masked_in_every_encoding(server, client, encoding) -> None:
    echoed = encodings(KEY)[encoding]
    # not in error.message: a field the error text falls back to showing whole
    body = f'{{"detail": "bad credentials", "credential": "{echoed}"}}'.encode()
    server.script(PATH, Status(401, body))
    text = error_of(await run(server, client))
    assert text.startswith("HTTP 401 Unauthorized")
    assert MARKER not in text and "***" in text


async def test_a_key_with_surrounding_whitespace_is_stripped_before_sending(server, client) -> None:
    server.script(PATH, SSE(COMPLETIONS.text))
    message = await run(server, client, api_key=f"  {KEY}\n")
    assert message.stop_reason == "stop", message.error_message
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_a_key_that_cannot_be_a_header_fails_without_showing_it(server, client) -> None:
    text = error_of(await run(server, client, api_key="sk-abc\ndef-MARKER"))
    assert "contains a control or non-ASCII character" in text and MARKER not in text
    assert server.requests == []


async def test_keys_never_reach_a_debug_log_record(server, client, caplog) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: httpx, httpcore, pi_trio, all of it
    echo = {"error": {"message": f"bad key {KEY}"}, "key": encodings(KEY)["json \\/"]}
    server.script(
        PATH,
        Status(401, echo, headers=[("x-echo-key", KEY)]),  # a header echo: httpcore logs it
        SSE(sse_events({"bad": KEY}, done="[DONE]"), headers=[("x-echo-key", KEY)]),
    )
    failed = await run(server, client, api_key=KEY + "\n")  # and a key read with its newline
    ok = await run(server, client, api_key=KEY + "\n")
    assert failed.stop_reason == "error" and ok.stop_reason in ("stop", "error")
    assert any(r.name.startswith("httpcore") for r in caplog.records)  # the trace did log
    for record in caplog.records:
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        text = record.getMessage() + " ".join(str(a) for a in args if a is not None)
        assert MARKER not in text, (record.name, text)


@pytest.mark.parametrize(
    ("name", "value", "echoed"),
    [
        ("Authorization", "Bearer tok-MARKER-0123456789", "tok-MARKER-0123456789"),
        ("x-api-key", "key-MARKER-0123456789", "key-MARKER-0123456789"),
    ],
)
async def test_a_credential_in_headers_is_masked_like_the_key(
    server, client, caplog, name, value, echoed
) -> None:
    """A custom server reached with ``headers=`` rather than ``api_key``: the header's value
    is never in an error, a log record or a repr (before: all three showed it)."""
    caplog.set_level(logging.DEBUG)
    body = json.dumps({"error": {"message": f"bad credential {echoed}"}}).encode()
    server.script(PATH, Status(401, body))
    message = await run(server, client, api_key="unused-key-0123", headers={name: value})
    assert server.requests[0].headers[name.lower()] == value  # it was sent
    assert "***" in error_of(message) and MARKER not in error_of(message)
    assert MARKER not in caplog.text
    options = pt.StreamOptions(headers={name: value, "X-Trace": "kept"})
    assert MARKER not in repr(options) and "kept" in repr(options)
    model = COMPLETIONS.model(server.url, headers={name: value})
    assert MARKER not in repr(model)


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ([("retry-after", "Tue, 01 Jan 10000000000 00:00:00 GMT")], b'{"error": "slow down"}'),
        ([], b"[" * 60_000),  # nested too deep for Python's parser
    ],
    ids=["date-past-year-9999", "deep-body"],
)
async def test_a_429_whose_extras_cannot_be_read_is_still_a_429_and_retried(
    server, client, headers, body
) -> None:
    """Before: an OverflowError or RecursionError ended the request, status and retry lost."""
    server.script(PATH, Status(429, body, headers=headers), SSE(COMPLETIONS.text))
    message = await run(server, client, max_retries=1)
    assert message.stop_reason == "stop", message.error_message
    assert len(server.requests) == 2
    server.script(PATH, Status(429, body, headers=headers))
    assert error_of(await run(server, client)).startswith("HTTP 429")


async def test_an_event_nested_too_deep_is_invalid_json(server, client) -> None:
    deep = "data: " + "[" * 60_000 + "\n\n"
    server.script(PATH, SSE([*COMPLETIONS.text[:1], deep, *COMPLETIONS.text[1:]]))
    assert error_of(await run(server, client)).startswith("invalid JSON in event")


async def test_an_sse_retry_field_of_other_digits_is_ignored(server, client) -> None:
    server.script(PATH, SSE(["retry: \u00b2\n\n", *COMPLETIONS.text]))
    message = await run(server, client)
    assert message.stop_reason == "stop", message.error_message


@pytest.mark.parametrize(("status", "reason"), [(302, "Found"), (204, "No Content")])
async def test_a_redirect_or_no_content_is_not_read_as_an_event_stream(
    server, client, status, reason
) -> None:
    """Before: with no content type, read as an empty stream, and reported as a stream cut
    short (no status, no redirect mentioned)."""
    server.script(
        PATH, Status(status, b"", headers=[("location", "https://elsewhere/")], content_type="")
    )
    text = error_of(await run(server, client))
    assert text.startswith(f"HTTP {status} {reason} is not an event stream"), text
