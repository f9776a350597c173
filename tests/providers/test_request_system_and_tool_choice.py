"""What each wire API's request carries for pi 1.6's additions, as sent to a server on
127.0.0.1: a transcript's system messages become the request's system prompt and tools
(none of the wire APIs takes system messages mid-conversation), and ``tool_choice`` is
written in each API's own form."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import pi_trio as pt

from ._bodies import SPECS as FIRST_SPECS
from ._bodies import Spec
from ._bodies_azure_mistral import SPECS as AZURE_MISTRAL_SPECS
from ._server import SSE, ScriptedServer

KEY = "sk-test-SECRET-0123456789"


def _tool(name: str) -> pt.Tool:
    return pt.Tool(name, f"The {name} tool", {"type": "object", "properties": {}})


SPECS = [*FIRST_SPECS, *AZURE_MISTRAL_SPECS]
CHAT_SHAPED = ("openai-completions", "mistral-conversations")  # messages, function tools
pytestmark = pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])


async def _sent(spec: Spec, server: ScriptedServer, client: Any, context: pt.Context,
                **options: Any) -> dict[str, Any]:  # fmt: skip
    server.script(spec.path, SSE(spec.text))
    model = spec.model(server.url)
    opts = pt.StreamOptions(api_key=KEY, http_client=client, **options)
    async with pt.stream_simple(model, context, opts) as events:
        async for event in events:
            assert not isinstance(event, pt.StreamError), event.error.error_message
    body: dict[str, Any] = server.requests[-1].json()
    return body


def _system_text(api: str, body: dict[str, Any]) -> str:
    if api == "anthropic-messages":
        return "".join(block["text"] for block in body["system"])
    if api == "google-generative-ai":
        return "".join(part["text"] for part in body["systemInstruction"]["parts"])
    items = body["messages"] if api in CHAT_SHAPED else body["input"]
    lead = items[0]
    assert lead["role"] in ("system", "developer")
    assert all(item.get("role") not in ("system", "developer") for item in items[1:])
    return str(lead["content"])


def _tool_names(api: str, body: dict[str, Any]) -> list[str]:
    if api == "google-generative-ai":
        return [t["name"] for t in body["tools"][0]["functionDeclarations"]]
    if api in CHAT_SHAPED:
        return [t["function"]["name"] for t in body["tools"]]
    return [t["name"] for t in body["tools"]]


async def test_system_messages_become_the_request_s_prompt_and_tools(
    spec: Spec, server: ScriptedServer, client: httpx.AsyncClient
) -> None:
    context = pt.Context(
        system_prompt="You are terse.",
        tools=[_tool("read"), _tool("write")],
        messages=[
            pt.SystemMessage("Project rules.", sections={"style": "Use lists."}),
            pt.UserMessage("Hi"),
            pt.SystemMessage("", tools_added=[_tool("search")], tools_removed=["write"]),
            pt.UserMessage("Find it"),
        ],
    )
    body = await _sent(spec, server, client, context)
    assert _system_text(spec.api, body) == "You are terse.\n\nProject rules.\n\nUse lists."
    assert _tool_names(spec.api, body) == ["read", "search"]
    text = json.dumps(body)
    assert "Find it" in text
    assert text.count("Project rules") == 1  # in the system prompt only


CHOICES: dict[str, dict[str, Any]] = {
    "openai-completions": {
        "auto": "auto", "none": "none", "required": "required",
        "named": {"type": "function", "function": {"name": "search"}},
    },
    "openai-responses": {
        "auto": "auto", "none": "none", "required": "required",
        "named": {"type": "function", "name": "search"},
    },
    "anthropic-messages": {
        "auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"},
        "named": {"type": "tool", "name": "search"},
    },
    "google-generative-ai": {
        "auto": {"functionCallingConfig": {"mode": "AUTO"}},
        "none": {"functionCallingConfig": {"mode": "NONE"}},
        "required": {"functionCallingConfig": {"mode": "ANY"}},
        "named": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["search"]}},
    },
}  # fmt: skip
CHOICES["azure-openai-responses"] = CHOICES["openai-responses"]  # the same body
CHOICES["mistral-conversations"] = CHOICES["openai-completions"]  # Mistral's forms match


@pytest.mark.parametrize("choice", ["auto", "none", "required", "named", None])
async def test_tool_choice_in_each_wire_api_s_own_form(
    spec: Spec, server: ScriptedServer, client: httpx.AsyncClient, choice: str | None
) -> None:
    context = pt.Context("Be brief.", [pt.UserMessage("Hi")], [_tool("search")])
    value = {"name": "search"} if choice == "named" else choice
    body = await _sent(spec, server, client, context, tool_choice=value)
    key = "toolConfig" if spec.api == "google-generative-ai" else "tool_choice"
    if choice is None:
        assert key not in body  # the API's own default
    else:
        assert body[key] == CHOICES[spec.api][choice]


@pytest.mark.parametrize("bad", ["any", {"name": 3}, {"tool": "x"}, 1])
def test_a_tool_choice_of_another_shape_is_refused_where_it_is_set(spec: Spec, bad: Any) -> None:
    with pytest.raises(ValueError, match="tool_choice must be 'auto', 'none', 'required' or"):
        pt.StreamOptions(tool_choice=bad)
