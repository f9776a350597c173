"""``pt.ProviderError``: each fault of the scripted server, for every wire API, becomes a record
a program can branch on (kind, status, retry facts, URL, the provider's code), while the error
assistant message stays pi's."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

import pi_trio as pt

from ._bodies import COMPLETIONS, SPECS, Spec
from ._server import SSE, ScriptedServer, Status, sse_events

KEY = "sk-test-SECRET-0123456789"
HTML = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>portal</body></html>"


def body(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code}}


# (name, reply, kind, status, retryable, retry_after, code, text in the message)
FAULTS = [
    ("401", Status(401, body("bad key", "authentication_error")), "auth", 401, False, None,
     "authentication_error", "HTTP 401 Unauthorized: bad key"),
    ("403", Status(403, body("forbidden", "permission_error")), "auth", 403, False, None,
     "permission_error", "HTTP 403 Forbidden: forbidden"),
    ("404", Status(404, body("no such model", "not_found_error")), "bad_request", 404, False,
     None, "not_found_error", "HTTP 404 Not Found: no such model"),
    ("408", Status(408, body("took too long", "timeout")), "timeout", 408, True, None,
     "timeout", "HTTP 408 Request Timeout"),
    ("429", Status(429, body("slow down", "rate_limit_error"), headers=[("retry-after", "7")]),
     "rate_limit", 429, True, 7.0, "rate_limit_error", "HTTP 429 Too Many Requests: slow down"),
    ("500", Status(500, body("oops", "api_error")), "server", 500, True, None, "api_error",
     "HTTP 500 Internal Server Error: oops"),
    ("503", Status(503, body("try later", "unavailable")), "overloaded", 503, True, None,
     "unavailable", "HTTP 503 Service Unavailable: try later"),
    ("529", Status(529, body("Overloaded", "overloaded_error")), "overloaded", 529, True, None,
     "overloaded_error", "HTTP 529: Overloaded"),
    ("html-200", Status(200, HTML, content_type="text/html"), "protocol", 200, False, None, None,
     "HTTP 200 OK is not an event stream (expected text/event-stream, got text/html): "
     "the body begins: <!DOCTYPE html><html><head><title>Sign in</title>"),
]  # fmt: skip


async def collect(
    spec: Spec, server: ScriptedServer, client: httpx.AsyncClient, **opts: Any
) -> list[Any]:
    model = spec.model(server.url)
    options = pt.StreamOptions(api_key=KEY, http_client=client, **{"max_retries": 0, **opts})
    context = pt.Context("sys", [pt.UserMessage("hi")])
    async with pt.stream_simple(model, context, options) as events:
        return [event async for event in events]


def url_of(spec: Spec, server: ScriptedServer) -> str:
    return server.url + spec.path.partition("?")[0]


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
@pytest.mark.parametrize("fault", FAULTS, ids=[f[0] for f in FAULTS])
async def test_http_faults(spec: Spec, fault: Any, server: ScriptedServer, client: Any) -> None:
    _, reply, kind, status, retryable, retry_after, code, text = fault
    server.script(spec.path, reply)
    events = await collect(spec, server, client)
    [error] = events
    assert isinstance(error, pt.StreamError)
    message = error.error
    assert message.stop_reason == "error"
    assert message.error_message is not None and message.error_message.startswith(text)
    record = error.provider_error
    assert isinstance(record, pt.ProviderError)
    assert str(record) == record.message == message.error_message  # pi's text, unchanged
    assert (record.kind, record.status, record.retryable) == (kind, status, retryable)
    assert (record.retry_after, record.code) == (retry_after, code)
    assert record.url == url_of(spec, server) and "?" not in record.url
    assert record.provider == message.provider
    if status == 404:
        assert url_of(spec, server) in message.error_message  # where it went, to check
    assert "provider_error" not in str(pt.to_json(error))


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
async def test_a_cut_stream_is_a_connection_error(spec: Spec, server: Any, client: Any) -> None:
    server.script(spec.path, SSE(spec.text[: spec.first_text_chunks], then="disconnect"))
    record = (await collect(spec, server, client))[-1].provider_error
    assert (record.kind, record.status, record.retryable) == ("connection", None, True)
    assert record.message.startswith("connection closed")


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
async def test_an_idle_stream_is_a_timeout(spec: Spec, server: Any, client: Any) -> None:
    server.script(spec.path, SSE(spec.text[: spec.first_text_chunks], then="stall"))
    record = (await collect(spec, server, client, idle_timeout=0.2))[-1].provider_error
    assert (record.kind, record.status) == ("timeout", None)
    assert record.message == "timeout: no event from the server for 0.2 s (the stream went idle)"


async def test_a_retry_after_longer_than_the_cap_keeps_its_facts(server: Any, client: Any) -> None:
    spec = COMPLETIONS
    server.script(
        spec.path, Status(429, body("quota", "rate_limit_error"), [("retry-after", "30")])
    )
    events = await collect(spec, server, client, max_retries=2, max_retry_delay=5)
    record = events[-1].provider_error
    assert (record.kind, record.status, record.retry_after) == ("rate_limit", 429, 30.0)
    assert "more than max_retry_delay 5 s" in record.message


async def test_the_agent_state_carries_the_provider_error(server: Any, client: Any) -> None:
    spec = COMPLETIONS
    server.script(spec.path, Status(429, body("slow down", "rate_limit_error")))
    agent = pt.Agent(
        pt.AgentState(model=spec.model(server.url)),
        stream_options=pt.StreamOptions(api_key=KEY, http_client=client, max_retries=0),
    )
    ends: list[pt.AgentEnd] = []
    agent.subscribe(lambda e: ends.append(e) if isinstance(e, pt.AgentEnd) else None)
    await agent.prompt("hi")
    assert agent.state.error_message == "HTTP 429 Too Many Requests: slow down (rate_limit_error)"
    error = agent.state.provider_error
    assert error is not None and (error.kind, error.status) == ("rate_limit", 429)
    assert ends[-1].error is error is agent.state.error


async def test_openai_responses_error_event_nested_under_error(server: Any, client: Any) -> None:
    spec = next(s for s in SPECS if s.api == "openai-responses")
    nested = {"type": "error", "error": {"code": "server_error", "message": "the model crashed"}}
    server.script(spec.path, SSE(sse_events(("error", nested))))
    record = (await collect(spec, server, client))[-1].provider_error
    assert record.message == "provider error in stream: server_error: the model crashed"
    assert (record.kind, record.code) == ("server", "server_error")


async def test_openai_responses_error_event_at_top_level(server: Any, client: Any) -> None:
    spec = next(s for s in SPECS if s.api == "openai-responses")
    flat = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}
    server.script(spec.path, SSE(sse_events(("error", flat))))
    record = (await collect(spec, server, client))[-1].provider_error
    assert record.message == "provider error in stream: rate_limit_exceeded: slow down"
    assert (record.kind, record.code) == ("rate_limit", "rate_limit_exceeded")


async def test_chat_completions_refusal_is_kept_as_text(server: Any, client: Any) -> None:
    chunks = sse_events(
        {"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I "}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {"refusal": "can't help."}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        done="[DONE]",
    )
    server.script(COMPLETIONS.path, SSE(chunks))
    events = await collect(COMPLETIONS, server, client)
    message = events[-1].message
    assert message.stop_reason == "stop"
    assert message.content == [pt.TextContent("I can't help.")]


async def test_an_unreachable_server_is_a_connection_error(client: Any) -> None:
    model = COMPLETIONS.model("http://127.0.0.1:9")  # discard port: nothing listens
    options = pt.StreamOptions(api_key=KEY, http_client=client, max_retries=0)
    async with pt.stream_simple(model, pt.Context("", [pt.UserMessage("hi")]), options) as s:
        [error] = [e async for e in s]
    record = error.provider_error
    assert (record.kind, record.status, record.retryable) == ("connection", None, True)


async def test_a_failure_is_logged_once_at_error(server: Any, client: Any, caplog: Any) -> None:
    server.script(COMPLETIONS.path, Status(500, body("oops", "api_error")))
    caplog.set_level(logging.DEBUG, logger="pi_trio")
    await collect(COMPLETIONS, server, client)
    records = [r for r in caplog.records if r.name == "pi_trio.providers"]
    assert [r.levelno for r in records] == [logging.ERROR]
    assert "HTTP 500 Internal Server Error: oops" in records[0].getMessage()


async def test_a_provider_error_on_the_spans(server: Any, client: Any) -> None:
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    import pi_trio.otel

    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pi_trio.otel.configure(tracer_provider=provider)
    try:
        spec = COMPLETIONS
        server.script(spec.path, Status(429, body("slow down", "rate_limit_error")))
        agent = pt.Agent(
            pt.AgentState(model=spec.model(server.url)),
            stream_options=pt.StreamOptions(api_key=KEY, http_client=client, max_retries=0),
        )
        await agent.prompt("hi")
    finally:
        pi_trio.otel.configure()
    spans = {span.name.split(" ")[0]: span for span in exporter.get_finished_spans()}
    chat, run = spans["chat"], spans["invoke_agent"]
    assert chat.parent.span_id == run.context.span_id
    assert chat.attributes["error.type"] == run.attributes["error.type"] == "rate_limit"
    assert chat.attributes["server.address"] == "127.0.0.1"
    assert chat.status.status_code is run.status.status_code is StatusCode.ERROR
    assert chat.status.description == "HTTP 429 Too Many Requests: slow down (rate_limit_error)"
    assert KEY not in str([dict(s.attributes) for s in exporter.get_finished_spans()])
