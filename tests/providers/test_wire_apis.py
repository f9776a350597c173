"""Every wire API against the scripted server: recorded bodies, faults, cancel, an agent run."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import pool_in_use

from ._bodies import SPECS as FIRST_SPECS
from ._bodies import Spec
from ._bodies_azure_mistral import SPECS as AZURE_MISTRAL_SPECS
from ._server import SSE, NeverAnswer, ScriptedServer, Status

KEY = "sk-test-SECRET-0123456789"
TOOLS = [
    pt.Tool(
        "get_weather",
        "Weather for a city",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    ),
    pt.Tool(
        "get_time",
        "Time in a zone",
        {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
    ),
]

SPECS = [*FIRST_SPECS, *AZURE_MISTRAL_SPECS]
pytestmark = pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])


def options(client: httpx.AsyncClient, **changes: Any) -> pt.StreamOptions:
    return pt.StreamOptions(api_key=KEY, http_client=client, **changes)


def context(*messages: pt.Message) -> pt.Context:
    return pt.Context(
        system_prompt="You are terse.",
        messages=list(messages) or [pt.UserMessage("Hi")],
        tools=TOOLS,
    )


async def collect(
    spec: Spec,
    server: ScriptedServer,
    client: httpx.AsyncClient,
    ctx: pt.Context | None = None,
    **opts: Any,
) -> list[Any]:
    model = spec.model(server.url)
    async with pt.stream_simple(model, ctx or context(), options(client, **opts)) as events:
        return [event async for event in events]


def final(events: list[Any]) -> pt.AssistantMessage:
    last = events[-1]
    return last.message if isinstance(last, pt.StreamDone) else last.error


async def test_text(spec, server, client) -> None:
    server.script(spec.path, SSE(spec.text))
    events = await collect(spec, server, client)
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert types[1:-1] == ["text_start", "text_delta", "text_delta", "text_end"]
    message = final(events)
    assert [block.text for block in message.content] == ["Hello world"]
    assert message.stop_reason == "stop"
    assert (message.api, message.provider, message.model) == (
        spec.api,
        message.provider,
        "test-model",
    )
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read) == spec.usage
    expected = (usage.input * 1.0 + usage.output * 2.0 + usage.cache_read * 0.5) / 1e6
    assert usage.cost.total == pytest.approx(expected)
    assert usage.cost.total > 0
    request = server.requests[0]
    assert KEY in str(request.headers)  # the key went to the server, as it must
    assert pool_in_use(client) == 0


async def test_thinking(spec, server, client) -> None:
    server.script(spec.path, SSE(spec.thinking))
    events = await collect(spec, server, client, reasoning="medium")
    message = final(events)
    assert message.stop_reason == "stop"
    thinking, text = message.content
    assert isinstance(thinking, pt.ThinkingContent) and thinking.thinking.startswith(
        "Let me think."
    )
    assert isinstance(text, pt.TextContent) and text.text == "Answer."
    assert next(e.type for e in events if e.type.startswith("thinking")) == "thinking_start"
    assert "thinking_end" in [e.type for e in events]
    if spec.api in (
        "anthropic-messages",
        "google-generative-ai",
        "openai-responses",
        "azure-openai-responses",
    ):
        assert thinking.thinking_signature  # kept for replay to the same model


async def test_parallel_tool_calls(spec, server, client) -> None:
    server.script(spec.path, SSE(spec.tools))
    model = spec.model(server.url)
    events = []
    partial = []  # arguments as seen at each delta (the partial message is updated in place)
    async with pt.stream_simple(model, context(), options(client)) as stream:
        async for event in stream:
            events.append(event)
            if event.type == "toolcall_delta":
                partial.append(dict(event.partial.content[event.content_index].arguments))
    message = final(events)
    assert message.stop_reason == "toolUse"
    calls = message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"tz": "UTC"}),
    ]
    assert all(c.id for c in calls) and calls[0].id != calls[1].id
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [e.tool_call.name for e in ends] == ["get_weather", "get_time"]
    if spec.api != "google-generative-ai":  # Gemini sends whole calls; the others stream args
        assert {"city": "Pa"} in partial  # arguments parsed while streaming


async def test_disconnect_mid_stream_keeps_partial_content(spec, server, client) -> None:
    server.script(spec.path, SSE(spec.text[: spec.first_text_chunks], then="disconnect"))
    events = await collect(spec, server, client)
    assert events[-1].type == "error"
    message = final(events)
    assert message.stop_reason == "error"
    assert "connection closed" in (message.error_message or "")
    assert message.content[0].text == "Hello"
    assert len(server.requests) == 1  # content was out: never retried


async def test_a_stream_that_ends_before_its_last_event_is_an_error(spec, server, client) -> None:
    # pi#8996, an early end counted as success: the body ends properly, with content, but
    # without the wire API's last event (openai-completions: [DONE] with no finish_reason, as
    # llama.cpp's server sends when a second request cuts the first short)
    early = spec.text[: spec.first_text_chunks]
    if spec.api == "openai-completions":
        early = [*early, "data: [DONE]\n\n"]
    server.script(spec.path, SSE(early))
    events = await collect(spec, server, client)
    assert events[-1].type == "error"
    message = final(events)
    assert message.stop_reason == "error"
    assert "before the response was complete" in (message.error_message or "")
    assert message.content[0].text == "Hello"


async def test_malformed_event(spec, server, client) -> None:
    bad = f"event: {spec.malformed_event}\ndata: {{oops\n\n"
    server.script(spec.path, SSE([*spec.text[: spec.first_text_chunks], bad, *spec.text]))
    message = final(await collect(spec, server, client))
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith(
        f"invalid JSON in event {spec.malformed_event!r}"
    )


@pytest.mark.parametrize("value", ["123", "null", '{"a": 1}'])
async def test_a_text_delta_that_is_not_text_leaves_a_usable_message(
    spec, server, client, value
) -> None:
    """Before: appended as it came, it left a message that could not be read, encoded or
    sent again (every later request of the session failed)."""
    chunks = [chunk.replace('"Hello"', value) for chunk in spec.text]
    server.script(spec.path, SSE(chunks))
    message = final(await collect(spec, server, client))
    assert all(isinstance(block.text, str) for block in message.content if block.type == "text")
    pt.to_json(message)  # encodes
    if message.stop_reason == "error":  # (completions skips a delta that is not a string)
        assert "a text delta that is not text" in (message.error_message or "")
    server.script(spec.path, SSE(spec.text))
    again = context(pt.UserMessage("Hi"), message, pt.UserMessage("Go on"))
    assert final(await collect(spec, server, client, again)).stop_reason == "stop"


def _with_token_counts(chunk: str, value: str) -> str:
    """``chunk`` (SSE text) with every token count in its JSON replaced by ``value`` (JSON)."""

    def swap(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: ("MARK" if "oken" in k and isinstance(v, int) else swap(v))
                for k, v in node.items()
            }
        return [swap(v) for v in node] if isinstance(node, list) else node

    lines = []
    for line in chunk.split("\n"):
        if line.startswith("data: {"):
            line = "data: " + json.dumps(swap(json.loads(line[6:]))).replace('"MARK"', value)
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize("value", ['"12"', "-5", "1" + "0" * 400, "[1]", "null", "3.5"])
async def test_token_counts_a_server_gets_wrong_never_cost_the_answer(
    spec, server, client, value
) -> None:
    """Before: a string or a list ended the finished answer in an error (the usage chunk
    comes last), 10**400 overflowed the cost, a negative count gave a negative cost."""
    server.script(spec.path, SSE([_with_token_counts(c, value) for c in spec.text]))
    message = final(await collect(spec, server, client))
    assert message.stop_reason == "stop", message.error_message
    assert [block.text for block in message.content] == ["Hello world"]
    usage = message.usage
    counts = (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens)
    assert all(type(n) is int and 0 <= n < 2**53 for n in counts)
    assert math.isfinite(usage.cost.total) and usage.cost.total >= 0


ENDS_ON_ITS_OWN = ("openai-completions", "mistral-conversations", "anthropic-messages")


@pytest.mark.parametrize("after", ["stall", "disconnect", "more events"])
async def test_nothing_is_read_past_the_end_marker(spec, server, client, after) -> None:
    """Past ``[DONE]`` (or ``message_stop``) the answer is complete, as the providers' SDKs
    read it: a server that keeps the connection open (before: an idle timeout, the answer
    lost), ends it uncleanly (before: an error) or sends more (before: applied) changes
    nothing."""
    if spec.api not in ENDS_ON_ITS_OWN:
        pytest.skip(f"{spec.api}: its stream has no end marker of its own")
    more = [chunk.replace("Hello", "INJECTED") for chunk in spec.text[: spec.first_text_chunks + 1]]
    chunks = spec.text if after == "stall" else [*spec.text, *more]
    server.script(spec.path, SSE(chunks, then="end" if after == "more events" else after))
    with trio.fail_after(10):  # the stall would last the idle timeout (120 s)
        message = final(await collect(spec, server, client))
    assert message.stop_reason == "stop", message.error_message
    assert [block.text for block in message.content] == ["Hello world"]
    assert pool_in_use(client) == 0


async def test_429_with_retry_after_then_success(spec, server, client) -> None:
    server.script(
        spec.path,
        Status(429, {"error": {"message": "rate limited"}}, headers=[("retry-after", "0.01")]),
        SSE(spec.text),
    )
    events = await collect(spec, server, client)
    assert final(events).stop_reason == "stop"
    assert [e.type for e in events].count("start") == 1  # the retry is invisible
    assert len(server.requests) == 2


async def test_500_then_success(spec, server, client) -> None:
    server.script(spec.path, Status(500, {"error": {"message": "oops"}}), SSE(spec.text))
    assert final(await collect(spec, server, client)).stop_reason == "stop"
    assert len(server.requests) == 2


async def test_401_is_an_error_message_without_the_key(spec, server, client) -> None:
    server.script(
        spec.path,
        Status(
            401, {"error": {"message": f"invalid x-api-key {KEY}", "type": "authentication_error"}}
        ),
    )
    events = await collect(spec, server, client)
    assert [e.type for e in events] == ["error"]
    message = final(events)
    assert message.error_message == (
        "HTTP 401 Unauthorized: invalid x-api-key *** (authentication_error)"
    )
    assert KEY not in repr(message) and KEY not in str(pt.to_json(message))
    assert len(server.requests) == 1


async def test_stall_after_headers(spec, server, client) -> None:
    server.script(spec.path, SSE(spec.text[: spec.first_text_chunks], then="stall"))
    message = final(await collect(spec, server, client, idle_timeout=0.2))
    assert message.stop_reason == "error"
    assert (
        message.error_message
        == "timeout: no event from the server for 0.2 s (the stream went idle)"
    )
    assert message.content[0].text == "Hello"
    assert pool_in_use(client) == 0


async def test_server_never_answers(spec, server, client) -> None:
    server.script(spec.path, NeverAnswer())
    message = final(await collect(spec, server, client, first_byte_timeout=0.1, max_retries=1))
    assert message.error_message == "timeout: no response from the server within 0.1 s"
    assert len(server.requests) == 2  # first-byte timeouts are retried
    assert pool_in_use(client) == 0


async def test_cancel_mid_stream(spec, server, client) -> None:
    server.script(spec.path, SSE(spec.text[: spec.first_text_chunks], then="stall"))
    model = spec.model(server.url)
    seen: list[str] = []
    with trio.CancelScope() as scope:
        async with pt.stream_simple(model, context(), options(client)) as events:
            async for event in events:
                seen.append(event.type)
                if event.type == "text_delta":
                    scope.cancel(reason="the test stops reading at the first text_delta")
    assert scope.cancelled_caught
    assert seen[-1] == "text_delta"  # nothing after the cancel
    assert pool_in_use(client) == 0
    # the connection was not left half-read: the next request works
    server.script(spec.path, SSE(spec.text))
    assert final(await collect(spec, server, client)).stop_reason == "stop"


async def test_missing_key_is_an_error_event(spec, monkeypatch) -> None:
    for names in pt.models.ENV_API_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    model = spec.model("https://api.example.invalid")
    async with pt.stream_simple(model, context(), pt.StreamOptions()) as events:
        got = [e async for e in events]
    assert [e.type for e in got] == ["error"]
    # pi's text first, then what to do: the variable to set
    text = got[0].error.error_message
    assert text.startswith(f"No API key for provider: {model.provider} (set ")
    variables = pt.models.ENV_API_KEYS[model.provider]
    assert all(name in text for name in variables)
    error = got[0].provider_error
    assert (error.kind, error.status, error.provider) == ("auth", None, model.provider)


async def test_agent_run_through_the_wire_api(spec, server, client) -> None:
    """prompt -> tool calls (run in parallel by the agent) -> results -> final text."""
    server.script(spec.path, SSE(spec.tools), SSE(spec.text))
    ran: list[tuple[str, str]] = []

    async def weather(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        ran.append(("get_weather", params["city"]))
        return pt.ToolResult([pt.TextContent("18 C, clear")])

    async def time_in(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        ran.append(("get_time", params["tz"]))
        return pt.ToolResult([pt.TextContent("12:00")])

    tools = [
        pt.AgentTool(t.name, t.name, t.description, t.parameters, fn)
        for t, fn in zip(TOOLS, (weather, time_in), strict=True)
    ]
    agent = pt.Agent(
        pt.AgentState(system_prompt="You are terse.", model=spec.model(server.url), tools=tools),
        stream_options=options(client),
    )
    await agent.prompt("Weather and time in Paris?")
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert sorted(name for name, _ in ran) == ["get_time", "get_weather"]
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "stop"
    assert last.content[0].text == "Hello world"  # type: ignore[union-attr]
    body = server.requests[1].json()  # the second request carries the tool results
    assert spec.tool_result_in_body(body)
    assert "Weather and time in Paris?" in str(body)
    assert agent.state.error_message is None
