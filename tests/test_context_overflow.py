"""``pt.is_context_overflow``: the texts providers and local servers send for a prompt over the
model's context window are recognised; rate limits and other errors are not."""

from __future__ import annotations

import pytest

import pi_trio as pt

faux = pt.faux


def failed(text: str) -> pt.AssistantMessage:
    return faux.assistant_message([], stop_reason="error", error_message=text)


OVERFLOWS = [
    # OpenAI Chat Completions (and vLLM, OpenRouter, LiteLLM, which say it the same way)
    "HTTP 400 Bad Request: This model's maximum context length is 128000 tokens. However, your "
    "messages resulted in 130542 tokens. Please reduce the length of the messages.",
    # OpenAI Responses
    "HTTP 400 Bad Request: Your input exceeds the context window of this model. Please adjust "
    "your input and try again.",
    "context_length_exceeded",
    # Anthropic, over the token limit and over the byte limit
    "HTTP 400 Bad Request: prompt is too long: 208310 tokens > 200000 maximum",
    'HTTP 413: {"type":"error","error":{"type":"request_too_large","message":"Request exceeds '
    'the maximum size"}}',
    # Google Gemini
    "HTTP 400 Bad Request: The input token count (1196265) exceeds the maximum number of tokens "
    "allowed (1048576).",
    # llama.cpp server, Ollama, LM Studio
    "HTTP 400 Bad Request: the request exceeds the available context size, try increasing it",
    "prompt too long; exceeded max context length by 1024 tokens",
    "HTTP 400: Trying to keep the first 9000 tokens when context the overflows. The number of "
    "tokens to keep from the initial prompt is greater than the context length",
    # Groq, Mistral, xAI
    "Please reduce the length of the messages or completion.",
    "Prompt contains 140000 tokens, too large for model with 131072 maximum context length",
    "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
]

NOT_OVERFLOWS = [
    "HTTP 429 Too Many Requests: rate limit reached for tokens per minute",
    "HTTP 400 Bad Request: messages.1.content: tool_use ids must be unique",
    "HTTP 401 Unauthorized: bad key",
    "HTTP 500 Internal Server Error: oops",
    "Request was aborted",
    "Throttling error: too many tokens per minute, slow down",
]


@pytest.mark.parametrize("text", OVERFLOWS)
def test_a_providers_too_long_error_is_an_overflow(text: str) -> None:
    assert pt.is_context_overflow(failed(text), 128_000)
    assert pt.is_context_overflow(failed(text), 0)  # the window is not needed for a text


@pytest.mark.parametrize("text", NOT_OVERFLOWS)
def test_other_errors_are_not(text: str) -> None:
    assert not pt.is_context_overflow(failed(text), 128_000)


def test_only_a_failed_response_is_read_for_its_text() -> None:
    answer = faux.assistant_message("prompt is too long, you said?")
    assert not pt.is_context_overflow(answer, 128_000)


def test_a_server_that_truncates_silently_is_caught_by_its_usage() -> None:
    over = faux.assistant_message("ok", usage=pt.Usage(input=9_000, cache_read=2_000))
    assert pt.is_context_overflow(over, 10_000)
    assert not pt.is_context_overflow(over, 12_000)
    assert not pt.is_context_overflow(over, 0)  # unknown window: usage says nothing
    full = faux.assistant_message([], stop_reason="length", usage=pt.Usage(input=9_950))
    assert pt.is_context_overflow(full, 10_000)
    some = faux.assistant_message("x", stop_reason="length", usage=pt.Usage(input=9_950, output=3))
    assert not pt.is_context_overflow(some, 10_000)
