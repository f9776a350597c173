"""Structured output over each wire API, against a server on 127.0.0.1: every request offers
the output tool and asks for a tool call in the API's own form (OpenAI "required", Anthropic
"any", Google "ANY"); a text answer is nudged; the tool call streamed back is the value."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import pi_trio as pt

from ._bodies import SPECS, Spec
from ._server import SSE, ScriptedServer

KEY = "sk-test-SECRET-0123456789"

# the recorded tool-call bodies call get_weather({"city": "Paris"}) and get_time: renamed, the
# first is the answer (the second, an unknown tool, gets its error result beside it)
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

REQUIRED: dict[str, tuple[str, Any]] = {
    "openai-completions": ("tool_choice", "required"),
    "openai-responses": ("tool_choice", "required"),
    "anthropic-messages": ("tool_choice", {"type": "any"}),
    "google-generative-ai": ("toolConfig", {"functionCallingConfig": {"mode": "ANY"}}),
}


def _tool_names(api: str, body: dict[str, Any]) -> list[str]:
    if api == "google-generative-ai":
        return [t["name"] for t in body["tools"][0]["functionDeclarations"]]
    if api == "openai-completions":
        return [t["function"]["name"] for t in body["tools"]]
    return [t["name"] for t in body["tools"]]


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
async def test_each_request_forces_a_tool_call_and_the_streamed_call_is_the_output(
    spec: Spec, server: ScriptedServer, client: httpx.AsyncClient
) -> None:
    answer = [chunk.replace("get_weather", "final_result") for chunk in spec.tools]
    server.script(spec.path, SSE(spec.text), SSE(answer))
    agent = pt.Agent(
        pt.AgentState(model=spec.model(server.url)),
        stream_options=pt.StreamOptions(api_key=KEY, http_client=client),
        output_type=WEATHER,
        output_retries=1,
    )
    await agent.prompt("Weather in Paris?")
    assert agent.state.error_message is None, agent.state.error_message
    assert agent.state.output == {"city": "Paris"}
    assert len(server.requests) == 2  # the text answer, then the nudged tool call
    key, value = REQUIRED[spec.api]
    for request in server.requests:
        body = request.json()
        assert body[key] == value
        assert _tool_names(spec.api, body) == ["final_result"]
    assert "a text answer is not accepted" in json.dumps(server.requests[1].json())


@pytest.mark.parametrize("choice", ["required", {"name": "final_result"}, "none"])
async def test_anthropic_with_thinking_gets_auto_for_a_forced_tool_choice(
    server: ScriptedServer, client: httpx.AsyncClient, choice: Any
) -> None:
    # Anthropic refuses "any" and "tool" with thinking on (a 400): such a request asks for
    # "auto", and a text answer is nudged instead
    spec = next(s for s in SPECS if s.api == "anthropic-messages")
    server.script(spec.path, SSE(spec.text))
    context = pt.Context("Be brief.", [pt.UserMessage("Hi")], [pt.output_tool(WEATHER).spec])
    options = pt.StreamOptions(
        api_key=KEY, http_client=client, reasoning="high", tool_choice=choice
    )
    async with pt.stream_simple(spec.model(server.url), context, options) as events:
        async for _ in events:
            pass
    body = server.requests[-1].json()
    assert "thinking" in body
    assert body["tool_choice"] == {"type": "none" if choice == "none" else "auto"}
