"""Provider log records: one ERROR per failed request, INFO per retry, and never an API key,
wherever a server echoes it (URL, response headers, error body, an error event)."""

from __future__ import annotations

import logging
from typing import Any

import attrs
import pytest

import pi_trio as pt

from ._bodies import COMPLETIONS, SPECS, Spec
from ._server import SSE, ScriptedServer, Status, sse_events

KEY = "sk-live-PLANTED-9f8e7d6c5b4a"
ENCODED = KEY.replace("-", "%2D")


def all_text(caplog: pytest.LogCaptureFixture) -> str:
    """Every record of every logger, formatted with its traceback."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in caplog.records)


def model_with_key_in_url(spec: Spec, base: str) -> pt.Model:
    scheme, _, rest = base.partition("://")
    return attrs.evolve(spec.model(f"{scheme}://user:{KEY}@{rest}"))


async def run_agent(model: pt.Model, client: Any) -> tuple[pt.Agent, list[pt.AgentEvent]]:
    options = pt.StreamOptions(api_key=KEY, http_client=client, max_retries=1)
    agent = pt.Agent(pt.AgentState(model=model), stream_options=options)
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("hi")
    return agent, events


def echoing_faults(spec: Spec) -> list[Any]:
    error = {"error": {"message": f"invalid key {KEY} (also {ENCODED})", "type": "auth"}}
    echo = [("x-echo-key", KEY), ("www-authenticate", f'Bearer realm="{KEY}"')]
    coded = {"error": {"message": "refused", "code": f"invalid_api_key:{KEY}"}}
    return [
        [Status(500, error, headers=echo), Status(401, error, headers=echo)],  # a retry first
        [Status(403, coded)],  # the key echoed in the error's code, a structured field
        [Status(200, f"<html>{KEY}</html>".encode(), content_type="text/html", headers=echo)],
        [SSE([*spec.text[: spec.first_text_chunks], f"data: {{oops {KEY}\n\n"], headers=echo)],
    ]


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
async def test_no_record_event_or_error_holds_the_key(
    spec: Spec, server: ScriptedServer, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # httpx, httpcore and pi_trio, all of it
    seen: list[Any] = []
    for replies in echoing_faults(spec):
        server.script(spec.path, *replies)
        agent, events = await run_agent(model_with_key_in_url(spec, server.url), client)
        seen += [agent.state.error_message, agent.state.error, agent.state.provider_error]
        seen += events
        error = agent.state.provider_error
        assert error is not None
        seen += [error.message, error.url, *error.fields().values()]
    # a connection error to a URL carrying the key (nothing listens on port 9)
    agent, events = await run_agent(
        model_with_key_in_url(COMPLETIONS, "http://127.0.0.1:9"), client
    )
    assert agent.state.provider_error is not None
    assert agent.state.provider_error.kind == "connection"
    seen += [agent.state.error_message, agent.state.provider_error, *events]
    assert server.requests, "the faults were served"
    text = all_text(caplog)
    assert "pi_trio.providers ERROR" in text and "pi_trio.providers INFO" in text
    assert "Traceback" in text  # the connection error's traceback is there, masked
    ours = [r for r in caplog.records if r.name == "pi_trio.providers"]
    assert all("\n" not in r.getMessage() for r in ours)  # messages are one line
    traced = [r for r in ours if r.exc_info]  # the tracebacks of expected failures: DEBUG
    assert traced and {r.levelno for r in traced} == {logging.DEBUG}
    for place in (text, "\n".join(repr(x) for x in seen)):
        assert KEY not in place and ENCODED not in place
        assert "PLANTED" not in place


async def test_a_retry_is_info_and_the_final_failure_one_error(
    server: ScriptedServer, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pi_trio")
    server.script(
        COMPLETIONS.path,
        Status(503, {"error": {"message": "busy"}}, headers=[("retry-after", "0.01")]),
        Status(503, {"error": {"message": "still busy"}}),
    )
    options = pt.StreamOptions(api_key=KEY, http_client=client, max_retries=1)
    message = await pt.complete_simple(
        COMPLETIONS.model(server.url), pt.Context("", [pt.UserMessage("hi")]), options
    )
    assert message.stop_reason == "error"
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "pi_trio.providers"]
    assert [level for level, _ in records] == [logging.INFO, logging.ERROR]
    assert "retrying in 0.01 s (retry 1 of 1)" in records[0][1]
    assert "(overloaded): HTTP 503 Service Unavailable: still busy" in records[1][1]


async def test_nothing_is_logged_per_delta(server: Any, client: Any, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="pi_trio")
    deltas = [{"choices": [{"index": 0, "delta": {"content": "x"}}]}] * 200
    stop = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    server.script(COMPLETIONS.path, SSE(sse_events(*deltas, stop, done="[DONE]")))
    options = pt.StreamOptions(api_key=KEY, http_client=client)
    message = await pt.complete_simple(
        COMPLETIONS.model(server.url), pt.Context("", [pt.UserMessage("hi")]), options
    )
    assert message.content == [pt.TextContent("x" * 200)]
    assert [r for r in caplog.records if r.name.startswith("pi_trio")] == []


def test_the_traceback_in_a_record_is_masked(caplog: pytest.LogCaptureFixture) -> None:
    """A decoder bug whose text quotes the key: the record's traceback is masked too."""
    from pi_trio.providers import MessageBuilder
    from pi_trio.providers._failure import ProviderFailure
    from pi_trio.providers._stream import failed_event

    caplog.set_level(logging.DEBUG, logger="pi_trio")
    try:
        raise KeyError(f"no field for {KEY}")
    except KeyError as exc:
        cause = exc
    failure = ProviderFailure("unexpected event from the provider", kind="protocol")
    failure.__cause__ = cause
    url = f"https://user:{KEY}@api.example/v1/x?key={KEY}"
    event = failed_event(MessageBuilder(COMPLETIONS.model("http://h")), failure, "bug", url, [KEY])
    assert event.provider_error is not None
    assert event.provider_error.url == "https://api.example/v1/x"
    text = all_text(caplog)
    assert "Traceback" in text and "KeyError: 'no field for ***'" in text
    assert KEY not in text
