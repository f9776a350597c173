"""An error a provider reports inside its stream, in every shape servers send: an object with a
message, a bare string, a chunk wrapped in a list, Mistral's own ``object: error``. The user
reads the provider's own text (before: an AttributeError, or Mistral's error ignored and the
stream reported as cut short)."""

from __future__ import annotations

import json

import pytest

import pi_trio as pt

from ._bodies import ANTHROPIC, GOOGLE, RESPONSES, Spec
from ._bodies_azure_mistral import MISTRAL
from ._server import SSE

SAID = "Overloaded, try again later"


def _event(name: str | None, data: object) -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n"


CASES = [
    (ANTHROPIC, _event("error", {"type": "error", "error": SAID})),
    (
        ANTHROPIC,
        _event("error", {"type": "error", "error": {"type": "overloaded_error", "message": SAID}}),
    ),
    (GOOGLE, _event(None, {"error": SAID})),
    (GOOGLE, _event(None, [{"error": {"code": 503, "message": SAID, "status": "UNAVAILABLE"}}])),
    (MISTRAL, _event(None, {"object": "error", "message": SAID, "type": "service_tier_capacity"})),
    (MISTRAL, _event(None, {"error": SAID})),
    (
        RESPONSES,
        _event("response.failed", {"type": "response.failed", "response": {"error": SAID}}),
    ),
]


@pytest.mark.parametrize(
    ("spec", "chunk"), CASES, ids=[f"{s.api}-{i}" for i, (s, _) in enumerate(CASES)]
)
async def test_the_providers_own_text_reaches_the_user(
    server, client, spec: Spec, chunk: str
) -> None:
    server.script(spec.path, SSE([chunk]))
    options = pt.StreamOptions(api_key="test-key-0123", http_client=client, max_retries=0)
    context = pt.Context("sys", [pt.UserMessage("hi")])
    message = await pt.complete_simple(spec.model(server.url), context, options)
    assert message.stop_reason == "error"
    assert SAID in (message.error_message or ""), message.error_message
