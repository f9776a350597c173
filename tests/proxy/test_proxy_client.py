"""pt.stream_proxy against a scripted proxy: the request it sends and what it makes of replies."""

from __future__ import annotations

from typing import Any

import pytest

import pi_trio as pt

from ..providers._server import SSE, ScriptedServer, Status, sse_events
from .conftest import TOKEN

USAGE = {
    "input": 5,
    "output": 3,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 8,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
MODEL = pt.get_model("faux", "faux-1")


async def run(fake: ScriptedServer, client, *replies: Any, **options: Any) -> list[Any]:
    fake.script("/api/stream", *replies)
    stream = pt.stream_proxy(fake.url + "/", TOKEN, http_client=client)
    ctx = pt.Context(system_prompt="Be terse.", messages=[pt.UserMessage("Hi")])
    async with stream(MODEL, ctx, pt.StreamOptions(max_retries=0, **options)) as events:
        return [event async for event in events]


def final(events: list[Any]) -> pt.AssistantMessage:
    last = events[-1]
    return last.message if isinstance(last, pt.StreamDone) else last.error


async def test_sends_pis_request(upstream: ScriptedServer, client) -> None:
    events = await run(
        upstream,
        client,
        SSE(sse_events({"type": "start"}, {"type": "done", "reason": "stop", "usage": USAGE})),
        temperature=0.5,
        reasoning="low",
    )
    assert [e.type for e in events] == ["start", "done"]
    (request,) = upstream.requests
    assert (request.method, request.path) == ("POST", "/api/stream")
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert set(body) == {"model", "context", "options"}
    assert body["model"] == pt.to_json(MODEL)
    assert body["model"]["baseUrl"] == MODEL.base_url  # pi's camelCase model
    assert body["context"] == {
        "systemPrompt": "Be terse.",
        "messages": [
            pt.to_json(pt.UserMessage("Hi", timestamp=body["context"]["messages"][0]["timestamp"]))
        ],
        "tools": [],
    }
    # only what pi's buildProxyRequestOptions sends, undefined ones left out
    assert body["options"] == {"temperature": 0.5, "reasoning": "low", "maxRetryDelayMs": 60000}
    assert isinstance(body["options"]["maxRetryDelayMs"], int)  # milliseconds, like pi
    assert final(events).usage.total_tokens == 8


async def test_rebuilds_signatures_and_extensions(upstream: ScriptedServer, client) -> None:
    body = sse_events(
        {"type": "start"},
        {"type": "thinking_start", "contentIndex": 0},
        {"type": "thinking_delta", "contentIndex": 0, "delta": "[redacted]"},
        {"type": "thinking_end", "contentIndex": 0, "contentSignature": "opaque", "redacted": True},
        {"type": "text_start", "contentIndex": 1},
        {"type": "text_delta", "contentIndex": 1, "delta": "Hi"},
        {"type": "text_end", "contentIndex": 1, "contentSignature": "tsig"},
        {"type": "toolcall_start", "contentIndex": 2, "id": "c1", "toolName": "f"},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": '{"a": '},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": "1}"},
        {"type": "toolcall_end", "contentIndex": 2, "thoughtSignature": "g-sig"},
        {"type": "some_future_event", "contentIndex": 9},
        {"type": "done", "reason": "toolUse", "usage": USAGE},
    )
    events = await run(upstream, client, SSE(body))
    message = final(events)
    assert message.content == [
        pt.ThinkingContent("[redacted]", thinking_signature="opaque", redacted=True),
        pt.TextContent("Hi", text_signature="tsig"),
        pt.ToolCall("c1", "f", {"a": 1}, thought_signature="g-sig"),
    ]
    assert message.stop_reason == "toolUse"
    assert "some_future_event" not in [e.type for e in events]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            Status(503, {"error": f"overloaded; your token {TOKEN} is fine"}),
            "Proxy error: HTTP 503 Service Unavailable: overloaded; your token *** is fine",
        ),
        (
            SSE(sse_events({"type": "start"}, {"type": "text_start", "contentIndex": 0})),
            "Proxy error: the proxy closed the stream before its done or error event",
        ),
        (
            SSE(
                sse_events(
                    {"type": "start"}, {"type": "text_delta", "contentIndex": 0, "delta": "x"}
                )
            ),
            "Proxy error: the proxy sent text_delta for content index 0, which is not an open "
            "TextContent block",
        ),
        (
            SSE(sse_events({"type": "start"}, {"type": "text_start", "contentIndex": "0"})),
            "Proxy error: invalid text_start event from the proxy: contentIndex: expected an "
            "integer, got string",
        ),
        (
            SSE(["data: {not json\n\n"]),
            "Proxy error: invalid JSON in event 'message': Expecting property name enclosed in "
            "double quotes: line 1 column 2 (char 1); data: {not json",
        ),
        (
            SSE(sse_events({"type": "error", "reason": "aborted", "usage": USAGE})),
            "",
        ),
    ],
    ids=["http-status", "early-close", "wrong-index", "bad-field", "bad-json", "error-event"],
)
async def test_failures_end_in_an_error_message(
    upstream: ScriptedServer, client, reply: Any, expected: str
) -> None:
    events = await run(upstream, client, reply)
    last = events[-1]
    assert isinstance(last, pt.StreamError)
    assert last.error.error_message == expected
    assert TOKEN not in repr(events)


async def test_a_server_error_event_keeps_reason_and_masks_the_token(
    upstream: ScriptedServer, client
) -> None:
    error = {"type": "error", "reason": "error", "errorMessage": f"echo {TOKEN}", "usage": USAGE}
    events = await run(upstream, client, SSE(sse_events({"type": "start"}, error)))
    assert [e.type for e in events] == ["start", "error"]
    assert final(events).error_message == "echo ***"
    assert final(events).usage.input == 5


async def test_the_agent_loop_runs_through_a_scripted_proxy(
    upstream: ScriptedServer, client
) -> None:
    """The stream function plugs into the loop like any provider."""
    reply = sse_events(
        {"type": "start"},
        {"type": "text_start", "contentIndex": 0},
        {"type": "text_delta", "contentIndex": 0, "delta": "Hello"},
        {"type": "text_end", "contentIndex": 0},
        {"type": "done", "reason": "stop", "usage": USAGE},
    )
    upstream.script("/api/stream", SSE(reply))
    config = pt.AgentLoopConfig(
        model=MODEL, stream_fn=pt.stream_proxy(upstream.url, TOKEN, http_client=client)
    )
    messages = await pt.run_agent_loop(
        [pt.UserMessage("Hi")], pt.AgentContext("", [], []), config, _Sink()
    )
    assert messages[-1].content == [pt.TextContent("Hello")]


class _Sink:
    async def send(self, event: Any) -> None:
        pass


@pytest.mark.parametrize("count", [None, 1.5, "12", -4, 10**30])
async def test_a_count_the_proxy_gets_wrong_never_costs_the_answer(
    upstream: ScriptedServer, client, count: Any
) -> None:
    """As every wire API reads counts (before: a done event whose output was null or a
    string turned a complete answer into an error; a negative or huge one was kept)."""
    usage = {**USAGE, "output": count}
    events = await run(
        upstream,
        client,
        SSE(sse_events({"type": "start"}, {"type": "done", "reason": "stop", "usage": usage})),
    )
    assert events[-1].type == "done"
    assert 0 <= final(events).usage.output < 2**53


async def test_a_credential_header_is_masked_in_the_proxys_errors(
    upstream: ScriptedServer, client
) -> None:
    """``headers=`` travel to the proxy (for its upstream): an error echoing one is masked."""
    secret = "Bearer sk-upstream-SECRET-0123"
    error = {
        "type": "error",
        "reason": "error",
        "errorMessage": f"upstream said: {secret}",
        "usage": USAGE,
    }
    events = await run(
        upstream,
        client,
        SSE(sse_events({"type": "start"}, error)),
        headers={"Authorization": secret},
    )
    assert "SECRET" not in (final(events).error_message or "")
