"""Azure OpenAI Responses and Mistral against bodies those services really sent (recorded by
other projects, see tests/data/recorded/SOURCE.md), and what each wire API sends and reads
that the shared matrix (test_wire_apis.py) does not pin: Azure's URL, key header and
deployment, Mistral's request fields, content filters, and the registry with only the
environment variable set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

import pi_trio as pt
from pi_trio.providers.azure_openai_responses import azure_base_url, deployment_name

from ._server import SSE, ScriptedServer, Status

KEY = "azure-or-mistral-SECRET-0123456789"
RECORDED = Path(__file__).parent.parent / "data" / "recorded"
AZURE_PATH = "/openai/v1/responses?api-version=v1"
MISTRAL_PATH = "/v1/chat/completions"
AZURE_VARIABLES = (
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_BASE_URL",
    "AZURE_OPENAI_RESOURCE_NAME",
    "AZURE_OPENAI_API_VERSION",
    "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
)


@pytest.fixture(autouse=True)
def _no_azure_or_mistral_environment(monkeypatch) -> None:
    for name in (*AZURE_VARIABLES, "MISTRAL_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def recorded(name: str) -> list[dict[str, Any]]:
    lines = (RECORDED / name).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def sse(events: list[dict[str, Any]], *, named: bool = False, done: bool = False) -> list[str]:
    """Each event as one SSE event; ``named``: with ``event: <type>`` as Azure sends it."""
    chunks = [
        (f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events
    ]
    return [*chunks, "data: [DONE]\n\n"] if done else chunks


def azure(server: ScriptedServer, **changes: Any) -> pt.Model:
    model = pt.get_model("azure-openai-responses", "gpt-4o-mini")
    return attrs.evolve(model, base_url=f"{server.url}/openai/v1", **changes)


def mistral(server: ScriptedServer, model_id: str = "mistral-small-latest") -> pt.Model:
    return attrs.evolve(pt.get_model("mistral", model_id), base_url=server.url)


async def run(
    model: pt.Model, client: httpx.AsyncClient, context: pt.Context | None = None, **options: Any
) -> pt.AssistantMessage:
    opts = pt.StreamOptions(api_key=KEY, http_client=client, max_retries=0, **options)
    return await pt.complete_simple(
        model, context or pt.Context("Be brief.", [pt.UserMessage("Hi")]), opts
    )


def weather_context(*messages: pt.Message) -> pt.Context:
    tool = pt.Tool(
        "weather",
        "The weather in a place",
        {"type": "object", "properties": {"location": {"type": "string"}}},
    )
    return pt.Context("Be brief.", list(messages) or [pt.UserMessage("Weather in SF?")], [tool])


# --- Azure OpenAI Responses --------------------------------------------------


async def test_azure_recorded_text(server, client) -> None:
    server.script(AZURE_PATH, SSE(sse(recorded("azure-text.1.chunks.txt"), named=True)))
    message = await run(azure(server), client)
    assert message.stop_reason == "stop", message.error_message
    assert [b.text for b in message.content] == ["Hello"]
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (11, 11, 22)
    assert message.usage.cost.total == pytest.approx((11 * 0.15 + 11 * 0.6) / 1e6)
    assert message.response_id == "resp_02ce8deeb6197db200698c5196e9588197a572bbea62d38cd1"
    assert (message.api, message.provider) == ("azure-openai-responses", "azure-openai-responses")
    request = server.requests[0]
    assert request.headers["api-key"] == KEY  # Azure's key header, not a bearer token
    assert "authorization" not in request.headers
    assert request.json()["model"] == "gpt-4o-mini"  # the deployment: the model id by default


async def test_azure_recorded_tool_call(server, client) -> None:
    server.script(AZURE_PATH, SSE(sse(recorded("azure-tool-call.1.chunks.txt"), named=True)))
    message = await run(azure(server), client, weather_context())
    assert message.stop_reason == "toolUse", message.error_message
    (call,) = message.tool_calls
    assert (call.name, call.arguments) == ("weather", {"location": "San Francisco"})
    assert call.id == (
        "call_H5DxLSFnsGhiROnUiDHmgyc8|fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f"
    )


async def test_azure_replays_its_tool_call_item_ids(server, client) -> None:
    server.script(AZURE_PATH, SSE(sse(recorded("azure-tool-call.1.chunks.txt"), named=True)))
    first = await run(azure(server), client, weather_context())
    (call,) = first.tool_calls
    result = pt.ToolResultMessage(call.id, "weather", [pt.TextContent("18 C")])
    context = weather_context(pt.UserMessage("Weather in SF?"), first, result)
    for model in (azure(server), azure(server, id="gpt-4.1")):  # the same model, another one
        server.script(AZURE_PATH, SSE(sse(recorded("azure-text.1.chunks.txt"), named=True)))
        assert (await run(model, client, context)).stop_reason == "stop"
    same, other = (server.requests[n].json()["input"] for n in (1, 2))
    replayed = next(i for i in same if i.get("type") == "function_call")
    assert replayed["id"] == "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f"
    for items in (same, other):  # the call id stays Azure's own, split from its item id
        call_item = next(i for i in items if i.get("type") == "function_call")
        output = next(i for i in items if i.get("type") == "function_call_output")
        assert call_item["call_id"] == output["call_id"] == "call_H5DxLSFnsGhiROnUiDHmgyc8"


def _cut_by_the_filter(reason: str) -> list[dict[str, Any]]:
    events = recorded("azure-text.1.chunks.txt")
    last = events[-1]
    response = {**last["response"], "status": "incomplete"}
    response["incomplete_details"] = {"reason": reason}
    return [*events[:-1], {**last, "type": "response.incomplete", "response": response}]


async def test_azure_content_filter_stop_is_an_error_naming_the_filter(server, client) -> None:
    server.script(AZURE_PATH, SSE(sse(_cut_by_the_filter("content_filter"), named=True)))
    events = []
    async with pt.stream_simple(
        azure(server),
        pt.Context("", [pt.UserMessage("Hi")]),
        pt.StreamOptions(api_key=KEY, http_client=client),
    ) as stream:
        events = [e async for e in stream]
    assert events[-1].type == "error"
    message = events[-1].error
    assert message.stop_reason == "error"  # never "length" or "stop"
    assert "content filter" in (message.error_message or "")
    assert "content_filter" in (message.error_message or "")
    assert message.content[0].text == "Hello"  # what arrived before the cut is kept
    assert events[-1].provider_error.code == "content_filter"


async def test_azure_output_limit_is_still_length(server, client) -> None:
    server.script(AZURE_PATH, SSE(sse(_cut_by_the_filter("max_output_tokens"), named=True)))
    assert (await run(azure(server), client)).stop_reason == "length"


async def test_azure_prompt_filter_refusal_shows_azures_text(server, client) -> None:
    body = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy. Please modify your prompt and retry.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
        }
    }
    server.script(AZURE_PATH, Status(400, body))
    message = await run(azure(server), client)
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith(
        "HTTP 400 Bad Request: The response was filtered"
    )
    assert "content management policy" in (message.error_message or "")


def test_azure_endpoint_from_the_environment(monkeypatch) -> None:
    model = pt.get_model("azure-openai-responses", "gpt-5")
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "contoso")
    assert azure_base_url(model) == "https://contoso.openai.azure.com/openai/v1"
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "https://fabrikam.cognitiveservices.azure.com/")
    assert azure_base_url(model) == "https://fabrikam.cognitiveservices.azure.com/openai/v1"
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "https://proxy.example/azure/openai/v1/")
    assert azure_base_url(model) == "https://proxy.example/azure/openai/v1"  # kept as given


def test_azure_deployment_names(monkeypatch) -> None:
    model = pt.get_model("azure-openai-responses", "gpt-5")
    assert deployment_name(model) == "gpt-5"
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-4o=prod-4o, gpt-5 = my-gpt5")
    assert deployment_name(model) == "my-gpt5"
    assert deployment_name(attrs.evolve(model, compat={"azure_deployment": "pinned"})) == "pinned"


async def test_azure_with_only_the_environment(server, client, monkeypatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", f"{server.url}/openai/v1")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-4o-mini=team-mini")
    path = "/openai/v1/responses?api-version=2025-04-01-preview"
    server.script(path, SSE(sse(recorded("azure-text.1.chunks.txt"), named=True)))
    model = pt.get_model("azure-openai-responses", "gpt-4o-mini")  # unchanged: no base_url
    opts = pt.StreamOptions(http_client=client)
    message = await pt.complete_simple(model, pt.Context("", [pt.UserMessage("Hi")]), opts)
    assert message.stop_reason == "stop", message.error_message
    assert server.requests[0].headers["api-key"] == KEY
    assert server.requests[0].json()["model"] == "team-mini"


async def test_azure_without_an_endpoint_is_an_error_naming_the_variables(monkeypatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    model = pt.get_model("azure-openai-responses", "gpt-5")
    message = await pt.complete_simple(model, pt.Context("", [pt.UserMessage("Hi")]))
    assert message.stop_reason == "error"
    text = message.error_message or ""
    assert "AZURE_OPENAI_BASE_URL" in text and "AZURE_OPENAI_RESOURCE_NAME" in text
    assert KEY not in text


@pytest.mark.parametrize(
    ("provider", "model_id", "variable"),
    [
        ("azure-openai-responses", "gpt-5", "AZURE_OPENAI_API_KEY"),
        ("mistral", "mistral-large-latest", "MISTRAL_API_KEY"),
    ],
)
async def test_a_missing_key_names_the_variable(provider, model_id, variable) -> None:
    model = pt.get_model(provider, model_id)
    message = await pt.complete_simple(model, pt.Context("", [pt.UserMessage("Hi")]))
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"No API key for provider: {provider} (set {variable}, or pass "
        "StreamOptions(api_key=...) or get_api_key)"
    )


# --- Mistral -----------------------------------------------------------------


async def test_mistral_recorded_text(server, client) -> None:
    server.script(MISTRAL_PATH, SSE(sse(recorded("mistral-text.chunks.txt"), done=True)))
    message = await run(mistral(server), client)
    assert message.stop_reason == "stop", message.error_message
    assert [b.text for b in message.content] == ["Hello, world! This is a test response."]
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (13, 8, 21)
    assert message.usage.cost.total == pytest.approx((13 * 0.15 + 8 * 0.6) / 1e6)
    assert message.response_id == "5319bd0299614c679a0068a4f2c8ffd0"
    request = server.requests[0]
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json()
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["stream"] is True and "max_tokens" not in body


async def test_mistral_recorded_tool_call(server, client) -> None:
    server.script(MISTRAL_PATH, SSE(sse(recorded("mistral-tool-call.chunks.txt"), done=True)))
    message = await run(mistral(server), client, weather_context())
    assert message.stop_reason == "toolUse", message.error_message
    (call,) = message.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "gSIMJiOkT",
        "weather",
        {"location": "San Francisco"},
    )
    assert message.usage.input == 124 and message.usage.output == 22


async def test_mistral_recorded_tool_call_in_pieces(server, client) -> None:
    """The id and name come first, the arguments in a later chunk that has only the index."""
    chunks = recorded("mistral-incremental-tool-call.chunks.txt")
    server.script(MISTRAL_PATH, SSE(sse(chunks, done=True)))
    message = await run(mistral(server), client, weather_context())
    assert message.stop_reason == "toolUse", message.error_message
    (call,) = message.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "chatcmpl-tool-9f149c74c42f265b",
        "webSearchTool",
        {"query": "current Berlin weather"},
    )


async def test_mistral_recorded_reasoning(server, client) -> None:
    server.script(MISTRAL_PATH, SSE(sse(recorded("mistral-reasoning.chunks.txt"), done=True)))
    message = await run(mistral(server, "magistral-medium-latest"), client, reasoning="high")
    assert message.stop_reason == "stop", message.error_message
    thinking, text = message.content
    assert isinstance(thinking, pt.ThinkingContent)
    assert thinking.thinking == "The user is asking for 2+2. This is basic arithmetic. 2+2=4."
    assert isinstance(text, pt.TextContent) and text.text == "2 + 2 = 4"
    assert server.requests[0].json()["prompt_mode"] == "reasoning"


def _finishing_with(reason: str) -> list[dict[str, Any]]:
    events = recorded("mistral-text.chunks.txt")
    return [
        *events[:-1],
        {**events[-1], "choices": [{**events[-1]["choices"][0], "finish_reason": reason}]},
    ]


async def test_mistral_content_filter_finish_is_an_error_naming_the_filter(server, client) -> None:
    server.script(MISTRAL_PATH, SSE(sse(_finishing_with("content_filter"), done=True)))
    message = await run(mistral(server), client)
    assert message.stop_reason == "error"  # never "stop" (pi-ai's default) or "length"
    assert "content filter" in (message.error_message or "")
    assert message.content[0].text.startswith("Hello")


@pytest.mark.parametrize(("reason", "stop"), [("length", "length"), ("model_length", "length")])
async def test_mistral_length_finishes(server, client, reason, stop) -> None:
    server.script(MISTRAL_PATH, SSE(sse(_finishing_with(reason), done=True)))
    assert (await run(mistral(server), client)).stop_reason == stop


async def test_mistral_error_finish_is_an_error(server, client) -> None:
    server.script(MISTRAL_PATH, SSE(sse(_finishing_with("error"), done=True)))
    message = await run(mistral(server), client)
    assert message.stop_reason == "error" and "finish_reason: error" in (
        message.error_message or ""
    )


async def test_mistral_request_fields(server, client) -> None:
    server.script(MISTRAL_PATH, SSE(sse(recorded("mistral-text.chunks.txt"), done=True)))
    foreign = pt.AssistantMessage(
        [pt.ToolCall("call_abc|fc_123456789012", "weather", {"location": "SF"})],
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        stop_reason="toolUse",
    )
    result = pt.ToolResultMessage(
        "call_abc|fc_123456789012", "weather", [pt.TextContent("boom")], is_error=True
    )
    context = weather_context(pt.UserMessage("Weather?"), foreign, result)
    await run(
        mistral(server),
        client,
        context,
        max_tokens=50,
        temperature=0.2,
        reasoning="low",
        session_id="sess-1",
        tool_choice={"name": "weather"},
    )
    request = server.requests[0]
    body = request.json()
    assert request.headers["x-affinity"] == "sess-1"
    assert body["max_tokens"] == 50 and body["temperature"] == 0.2
    assert body["reasoning_effort"] == "high"  # mistral-small-latest takes an effort
    assert "prompt_mode" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assistant = body["messages"][2]
    (sent_call,) = assistant["tool_calls"]
    new_id = sent_call["id"]
    assert len(new_id) == 9 and new_id.isalnum()  # Mistral's id shape
    tool = body["messages"][3]
    assert tool["role"] == "tool" and tool["tool_call_id"] == new_id
    assert tool["content"] == [{"type": "text", "text": "[tool error] boom"}]


async def test_mistral_with_only_the_environment(server, client, monkeypatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", KEY)
    server.script(MISTRAL_PATH, SSE(sse(recorded("mistral-text.chunks.txt"), done=True)))
    opts = pt.StreamOptions(http_client=client)
    context = pt.Context("", [pt.UserMessage("Hi")])
    message = await pt.complete_simple(mistral(server), context, opts)
    assert message.stop_reason == "stop", message.error_message
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
