"""Per-API details: request bodies, compat switches, stop reasons, message transformation."""

from __future__ import annotations

import attrs
import pytest

import pi_trio as pt
from pi_trio.providers import anthropic, google, openai_completions, openai_responses
from pi_trio.providers._transform import transform_messages

from ._bodies import RESPONSES, _r, _r_message
from ._server import SSE, sse_events

KEY = "sk-test-SECRET-0123456789"


def model(api: str, provider: str, base_url: str, **changes) -> pt.Model:
    return pt.Model(id="m-1", name="M", api=api, provider=provider, base_url=base_url, **changes)


def ctx(*messages: pt.Message) -> pt.Context:
    return pt.Context(system_prompt="Be brief.", messages=list(messages) or [pt.UserMessage("Hi")])


def test_completions_compat_openai() -> None:
    m = model("openai-completions", "openai", "https://api.openai.com/v1", reasoning=True)
    body = openai_completions.build_request(m, ctx(), pt.StreamOptions(reasoning="low"), KEY).body
    assert body["messages"][0] == {"role": "developer", "content": "Be brief."}
    assert body["max_completion_tokens"] == 16_384 and "max_tokens" not in body
    assert body["stream_options"] == {"include_usage": True} and body["store"] is False
    assert body["reasoning_effort"] == "low"


def test_completions_compat_local_server() -> None:
    m = model("openai-completions", "ollama", "http://127.0.0.1:11434/v1", reasoning=True)
    request = openai_completions.build_request(m, ctx(), pt.StreamOptions(max_tokens=99), "")
    assert request.url == "http://127.0.0.1:11434/v1/chat/completions"
    assert request.body["messages"][0]["role"] == "system"
    assert request.body["max_tokens"] == 99 and "store" not in request.body
    assert "authorization" not in request.headers  # no key needed, none sent


def test_completions_compat_overrides_and_openrouter() -> None:
    m = model(
        "openai-completions",
        "openrouter",
        "https://openrouter.ai/api/v1",
        reasoning=True,
        compat={"supports_usage_in_streaming": False, "max_tokens_field": "max_tokens"},
    )
    body = openai_completions.build_request(m, ctx(), pt.StreamOptions(reasoning="high"), KEY).body
    assert "stream_options" not in body and body["max_tokens"] == 16_384
    assert body["reasoning"] == {"effort": "high"}


def test_anthropic_request() -> None:
    m = model(
        "anthropic-messages",
        "anthropic",
        "https://api.anthropic.com",
        reasoning=True,
        max_tokens=64_000,
    )
    request = anthropic.build_request(m, ctx(), pt.StreamOptions(reasoning="medium"), KEY)
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == KEY and request.headers["anthropic-version"]
    body = request.body
    assert body["thinking"]["type"] == "enabled" and body["thinking"]["budget_tokens"] == 8192
    assert body["max_tokens"] == 32_000 + 8192
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert KEY not in repr(request)


def test_google_request() -> None:
    m = model("google-generative-ai", "google", "https://g.example/v1beta", reasoning=True)
    request = google.build_request(m, ctx(), pt.StreamOptions(), KEY)
    assert request.url == "https://g.example/v1beta/models/m-1:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert request.body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}


async def test_responses_incomplete_is_length_not_stop(server, client) -> None:
    """pi-ai maps response.incomplete (max_output_tokens hit) to "stop"; we say "length"."""
    body = sse_events(
        _r("response.created", response={"id": "resp_1"}),
        *_r_message(["Cut off mid"]),
        _r(
            "response.incomplete",
            response={
                "id": "resp_1",
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "usage": {"input_tokens": 3, "output_tokens": 7},
            },
        ),
    )
    server.script(RESPONSES.path, SSE(body))
    m = RESPONSES.model(server.url)
    options = pt.StreamOptions(api_key=KEY, http_client=client)
    message = await pt.complete_simple(m, ctx(), options)
    assert message.stop_reason == "length"
    assert message.content[0].text == "Cut off mid" and message.usage.output == 7


async def test_stream_without_end_marker_is_an_error(server, client) -> None:
    server.script(RESPONSES.path, SSE(RESPONSES.text[:-1]))  # no response.completed
    options = pt.StreamOptions(api_key=KEY, http_client=client)
    message = await pt.complete_simple(RESPONSES.model(server.url), ctx(), options)
    assert message.stop_reason == "error"
    assert message.error_message.startswith("connection closed before the response was complete")


# --- transformation -------------------------------------------------------------------------

TARGET = model("anthropic-messages", "anthropic", "https://a.example", input=("text",))


def assistant(
    *content, stop_reason="toolUse", provider="openai", api="openai-responses", model_id="gpt"
) -> pt.AssistantMessage:
    return pt.AssistantMessage(
        content=list(content), api=api, provider=provider, model=model_id, stop_reason=stop_reason
    )


def test_transform_skips_failed_turns_and_fills_orphans() -> None:
    call = pt.ToolCall("call_1|fc+/=odd", "read", {"path": "a"})
    messages = [
        pt.UserMessage("go"),
        assistant(pt.TextContent("partial"), stop_reason="error"),
        assistant(pt.ThinkingContent("I think", thinking_signature="sig"), call),
        pt.UserMessage("never mind"),
    ]
    out = transform_messages(messages, TARGET, anthropic._normalize_id)
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "user"]
    kept = out[1]
    assert isinstance(kept, pt.AssistantMessage)
    assert kept.content[0] == pt.TextContent("I think")  # another model's thinking -> text
    new_id = kept.content[1].id
    assert new_id == "call_1_fc___odd"
    orphan = out[2]
    assert orphan.tool_call_id == new_id and orphan.is_error
    assert orphan.content == [pt.TextContent("No result provided")]
    assert messages[2].content[1].id == "call_1|fc+/=odd"  # the caller's transcript is untouched


def test_transform_renames_results_and_replaces_images() -> None:
    call = pt.ToolCall("a|b", "shot", {})
    image = pt.ImageContent("AAAA", "image/png")
    messages = [
        pt.UserMessage([pt.TextContent("look"), image, image]),
        assistant(call),
        pt.ToolResultMessage("a|b", "shot", [image]),
    ]
    out = transform_messages(messages, TARGET, anthropic._normalize_id)
    assert out[0].content == [
        pt.TextContent("look"),
        pt.TextContent("(image omitted: model does not support images)"),
    ]
    assert out[2].tool_call_id == "a_b"
    assert out[2].content == [pt.TextContent("(tool image omitted: model does not support images)")]


def test_transform_keeps_same_model_thinking() -> None:
    same = attrs.evolve(TARGET, id="gpt", provider="openai", api="openai-responses")
    block = pt.ThinkingContent("", thinking_signature='{"type":"reasoning"}')
    out = transform_messages([assistant(block, stop_reason="stop")], same)
    assert out[0].content == [block]


@pytest.mark.parametrize("level", ["minimal", "high", "xhigh"])
def test_responses_reasoning_levels(level) -> None:
    m = model("openai-responses", "openai", "https://api.openai.com/v1", reasoning=True)
    body = openai_responses.build_request(m, ctx(), pt.StreamOptions(reasoning=level), KEY).body
    assert body["reasoning"]["effort"] == ("high" if level == "xhigh" else level)
    assert body["include"] == ["reasoning.encrypted_content"]
