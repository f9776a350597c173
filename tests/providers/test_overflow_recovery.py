"""A request too long for the model's context window, on each wire API: the provider's real
error body (served from 127.0.0.1) is recognised as an overflow, the transcript is compacted
once and the request is sent again; a second overflow is the run's error."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import pi_trio as pt

from ._bodies import SPECS, Spec
from ._server import SSE, ScriptedServer, Status

KEY = "sk-test-SECRET-0123456789"

# what each service answers (HTTP 400) to a prompt over its context window
OVERFLOW_BODIES: dict[str, dict[str, Any]] = {
    "openai-completions": {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 130542 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "openai-responses": {
        "error": {
            "message": "Your input exceeds the context window of this model. Please adjust "
            "your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    },
    "anthropic-messages": {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum",
        },
    },
    "google-generative-ai": {
        "error": {
            "code": 400,
            "message": "The input token count (1196265) exceeds the maximum number of tokens "
            "allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    },
}

HISTORY: list[pt.AgentMessage] = [
    message
    for i in range(4)
    for message in (
        pt.UserMessage(f"question {i}: " + "tell me more " * 40),
        pt.AssistantMessage(
            content=[pt.TextContent(f"answer {i}: " + "here is more " * 40)],
            api="faux",
            provider="faux",
            model="faux-1",
            usage=pt.Usage(),
            stop_reason="stop",
        ),
    )
]


def agent_for(spec: Spec, server: ScriptedServer, client: httpx.AsyncClient) -> pt.Agent:
    model = spec.model(server.url, context_window=200_000)
    options = pt.StreamOptions(api_key=KEY, http_client=client, max_retries=0)
    state = pt.AgentState(model=model, messages=HISTORY)
    return pt.Agent(state, stream_options=options, compaction=pt.Compaction(keep_recent_tokens=200))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.api)
async def test_an_overflow_is_compacted_once_and_retried(
    spec: Spec, server: ScriptedServer, client: httpx.AsyncClient
) -> None:
    overflow = Status(400, OVERFLOW_BODIES[spec.api])
    server.script(spec.path, overflow, SSE(spec.text), SSE(spec.text))
    agent = agent_for(spec, server, client)
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("and now?")
    assert agent.state.error_message is None
    ends = [e for e in events if isinstance(e, pt.CompactionEnd)]
    starts = [e for e in events if isinstance(e, pt.CompactionStart)]
    assert [s.reason for s in starts] == ["overflow"]
    assert len(ends) == 1 and ends[0].will_retry and ends[0].summary == "Hello world"
    failed = next(
        e.message for e in events if isinstance(e, pt.MessageEnd) and e.message.role == "assistant"
    )
    assert isinstance(failed, pt.AssistantMessage) and failed.stop_reason == "error"
    assert pt.is_context_overflow(failed, 200_000)
    messages = agent.state.messages
    assert isinstance(messages[0], pt.CompactionSummary)
    assert messages[0].summary == "Hello world"
    assert not any(
        isinstance(m, pt.AssistantMessage) and m.stop_reason == "error" for m in messages
    )  # the failed response is not in what the model sees next
    last = messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "stop"
    assert len(server.requests) == 3
    summary_request, retry = server.requests[1].body.decode(), server.requests[2].body.decode()
    assert "question 0" in summary_request and "<conversation>" in summary_request
    assert "question 0" not in retry and "Hello world" in retry and "and now?" in retry


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.api)
async def test_a_second_overflow_is_the_runs_error(
    spec: Spec, server: ScriptedServer, client: httpx.AsyncClient
) -> None:
    overflow = Status(400, OVERFLOW_BODIES[spec.api])
    server.script(spec.path, overflow, SSE(spec.text), overflow)
    agent = agent_for(spec, server, client)
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("and now?")
    assert len(server.requests) == 3
    assert [e.type for e in events].count("compaction_start") == 1
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"
    assert agent.state.error_message == last.error_message
    assert pt.is_context_overflow(last, 200_000)
