"""google-vertex against Vertex's and Gemini's recorded streams, served from 127.0.0.1:
application-default credentials from a fake ADC file whose token endpoint is the scripted
server, express mode with an API key, the URLs pi-ai's SDK builds, a safety stop, and the
fault matrix every wire API passes."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import pool_in_use
from pi_trio.providers.google_vertex import forget_credentials, vertex_url

from ._cloud import collect, data, final, vertex_model
from ._server import SSE, NeverAnswer, ScriptedServer, Status, sse_events

pytest.importorskip("google.auth")

TOKEN = "ya29.a0-TEST-ACCESS-TOKEN-0123456789abcdef"
SUBJECT = "subject-TOKEN-from-the-workload-0123"
PROJECT, LOCATION = "pi-trio-test", "us-central1"
MODEL_PATH = "/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
ADC_PATH = f"/{LOCATION}/v1/projects/{PROJECT}/locations/{LOCATION}{MODEL_PATH}"
TEXT = data("gemini_text_two_events.sse").decode().split("\r\n\r\n")[:-1]
TEXT = [chunk + "\r\n\r\n" for chunk in TEXT]


@pytest.fixture(autouse=True)
def google_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("GOOGLE_CLOUD_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GCLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", LOCATION)
    monkeypatch.setenv("HOME", "/nonexistent-home")  # no gcloud ADC of the machine
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    forget_credentials()
    yield
    forget_credentials()


@pytest.fixture
def adc(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake ADC file whose token endpoint is the scripted server: workload identity
    federation (an "external_account" exchanging a subject token read from a file), the one
    ADC type that takes its token endpoint from the file with no key to sign with (an
    authorized user's always goes to oauth2.googleapis.com). The audience names no project
    number, so google-auth looks up no project over the network."""
    subject = tmp_path / "subject-token.txt"
    subject.write_text(SUBJECT)
    info = {
        "type": "external_account",
        "audience": "//iam.googleapis.com/pi-trio-test-audience",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": f"{server.url}/token",
        "credential_source": {"file": str(subject)},
    }
    path = tmp_path / "adc.json"
    path.write_text(json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    server.script("/token", Status(200, TOKEN_ANSWER))


TOKEN_ANSWER = {
    "access_token": TOKEN,
    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
    "token_type": "Bearer",
    "expires_in": 3600,
}


def model_at(server: ScriptedServer) -> pt.Model:
    return vertex_model(server.url + "/{location}")  # the SDK's URL, on the local server


async def run(server: ScriptedServer, client: Any, **options: Any) -> list[Any]:
    return await collect(model_at(server), pt.StreamOptions(http_client=client, **options))


async def test_recorded_stream_with_application_default_credentials(server, client, adc) -> None:
    server.script(ADC_PATH, SSE(TEXT))
    events = await run(server, client)
    message = final(events)
    assert message.stop_reason == "stop"
    assert message.content[0].text == "The temperature in Paris is 30°C.\n"
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (79, 12, 91)
    assert (message.api, message.provider) == ("google-vertex", "google-vertex")
    token_request, request = server.requests
    assert token_request.path == "/token" and SUBJECT.encode() in token_request.body
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-goog-api-key" not in request.headers
    assert request.json()["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    # the token is kept: a second request does not fetch another
    server.script(ADC_PATH, SSE(TEXT))
    await run(server, client)
    assert [r.path for r in server.requests].count("/token") == 1
    assert pool_in_use(client) == 0


async def test_recorded_vertex_body_keeps_the_thought_signature(server, client, adc) -> None:
    path = ADC_PATH.replace("gemini-2.5-flash", "gemini-3-flash-preview")
    server.script(path, SSE([data("vertex_gemini3_flash.sse").decode()]))
    model = vertex_model(server.url + "/{location}", "gemini-3-flash-preview")
    message = final(await collect(model, pt.StreamOptions(http_client=client)))
    assert message.stop_reason == "stop" and message.content[0].text == "OK"
    assert (message.content[0].text_signature or "").startswith("CiQBjz1rX")
    assert (message.usage.input, message.usage.output) == (5, 101)  # thoughts count as output
    assert message.response_id == "a9--aa6MOKL4vdIPz7X2iQ4"


async def test_recorded_function_call(server, client, adc) -> None:
    server.script(ADC_PATH, SSE([data("gemini_function_call.sse").decode()]))
    message = final(await run(server, client))
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("get_temperature", {"city": "Paris"})
    ]


async def test_a_safety_block_is_an_error_naming_the_filter(server, client, adc) -> None:
    blocked = json.loads(data("gemini_safety_blocked.json"))
    server.script(ADC_PATH, SSE(sse_events(blocked)))
    message = final(await run(server, client))
    assert message.stop_reason == "error"
    assert message.error_message == (
        "the response was blocked by Google's content filter (finishReason SAFETY)"
    )


async def test_express_mode_sends_the_api_key(server, client, monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_API_KEY", "AIza-vertex-express-KEY-0123")
    custom = vertex_model(server.url + "/vertex")  # a custom base URL: the collection itself
    server.script(f"/vertex/v1{MODEL_PATH}", SSE(TEXT))
    message = final(await collect(custom, pt.StreamOptions(http_client=client)))
    assert message.stop_reason == "stop"
    (request,) = server.requests  # no token endpoint involved
    assert request.headers["x-goog-api-key"] == "AIza-vertex-express-KEY-0123"
    assert "authorization" not in request.headers


def test_urls_follow_the_sdk() -> None:
    default = pt.get_model("google-vertex", "gemini-2.5-pro")
    tail = "publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert vertex_url(default, project="p", location="us-central1") == (
        f"https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/{tail}"
    )
    assert vertex_url(default, project="p", location="global") == (
        f"https://aiplatform.googleapis.com/v1/projects/p/locations/global/{tail}"
    )
    assert vertex_url(default, project=None, location=None) == (
        f"https://aiplatform.googleapis.com/v1/{tail}"
    )
    custom = vertex_model("https://proxy.example/v1beta1", "gemini-2.5-pro")
    assert vertex_url(custom, project="p", location="eu") == f"https://proxy.example/v1beta1/{tail}"


@pytest.mark.parametrize(
    ("unset", "words"),
    [
        ("GOOGLE_CLOUD_PROJECT", "Vertex AI requires a project ID: set GOOGLE_CLOUD_PROJECT"),
        ("GOOGLE_CLOUD_LOCATION", "Vertex AI requires a location: set GOOGLE_CLOUD_LOCATION"),
    ],
)
async def test_a_missing_project_or_location_names_the_variable(monkeypatch, unset, words) -> None:
    monkeypatch.delenv(unset)
    events = await collect(
        vertex_model("https://{location}-aiplatform.googleapis.com"), pt.StreamOptions()
    )
    assert [e.type for e in events] == ["error"]
    assert (final(events).error_message or "").startswith(words)


async def test_missing_credentials_say_what_to_do(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    events = await collect(
        vertex_model("https://{location}-aiplatform.googleapis.com"), pt.StreamOptions()
    )
    assert [e.type for e in events] == ["error"]
    text = final(events).error_message or ""
    assert text.startswith("No Google application-default credentials for provider google-vertex")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in text and "GOOGLE_CLOUD_API_KEY" in text
    assert events[0].provider_error.kind == "auth"


async def test_without_google_auth_the_error_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)
    events = await collect(
        vertex_model("https://{location}-aiplatform.googleapis.com"), pt.StreamOptions()
    )
    assert [e.type for e in events] == ["error"]
    assert "pip install 'pi-trio[vertex]'" in (final(events).error_message or "")


async def test_disconnect_mid_stream_keeps_partial_content(server, client, adc) -> None:
    server.script(ADC_PATH, SSE(TEXT[:1], then="disconnect"))
    message = final(await run(server, client))
    assert "connection closed" in (message.error_message or "")
    assert message.content[0].text == "The temperature in Paris"


async def test_a_stream_without_finish_reason_is_an_error(server, client, adc) -> None:
    server.script(ADC_PATH, SSE(TEXT[:1]))
    message = final(await run(server, client))
    assert message.error_message == (
        "connection closed before the response was complete (no finishReason)"
    )


async def test_malformed_event(server, client, adc) -> None:
    server.script(ADC_PATH, SSE([TEXT[0], "data: {oops\n\n", TEXT[1]]))
    message = final(await run(server, client))
    assert (message.error_message or "").startswith("invalid JSON in event 'message'")


async def test_429_with_retry_after_then_success(server, client, adc) -> None:
    busy = {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}
    server.script(ADC_PATH, Status(429, busy, headers=[("retry-after", "0.01")]), SSE(TEXT))
    events = await run(server, client)
    assert final(events).stop_reason == "stop"
    assert [e.type for e in events].count("start") == 1
    assert [r.path for r in server.requests].count(ADC_PATH) == 2


async def test_500_then_success(server, client, adc) -> None:
    server.script(ADC_PATH, Status(500, {"error": {"message": "internal"}}), SSE(TEXT))
    assert final(await run(server, client)).stop_reason == "stop"


async def test_401_echoing_the_token_masks_it_everywhere(server, client, adc, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"token {TOKEN} expired", "status": "UNAUTHENTICATED"}}
    server.script(ADC_PATH, Status(401, echo, headers=[("x-echo", TOKEN)]))
    events = await run(server, client)
    message = final(events)
    assert message.error_message == "HTTP 401 Unauthorized: token *** expired (UNAUTHENTICATED)"
    assert TOKEN not in str(pt.to_json(message))
    for record in caplog.records:
        assert TOKEN not in record.getMessage() + (record.exc_text or ""), record.name


async def test_slow_drip_of_keepalives_hits_the_idle_timeout(server, client, adc) -> None:
    server.script(ADC_PATH, SSE([TEXT[0], *[": ping\n\n"] * 100], interval=0.05))
    message = final(await run(server, client, idle_timeout=0.3))
    assert message.error_message == (
        "timeout: no event from the server for 0.3 s (the stream went idle)"
    )


async def test_server_never_answers(server, client, adc) -> None:
    server.script(ADC_PATH, NeverAnswer())
    message = final(await run(server, client, first_byte_timeout=0.1, max_retries=1))
    assert message.error_message == "timeout: no response from the server within 0.1 s"
    assert pool_in_use(client) == 0


async def test_cancel_mid_stream_leaks_nothing(server, client, adc) -> None:
    server.script(ADC_PATH, SSE(TEXT[:1], then="stall"))
    seen: list[str] = []
    with trio.CancelScope() as scope:
        ctx = pt.Context(messages=[pt.UserMessage("Hi")])
        options = pt.StreamOptions(http_client=client)
        async with pt.stream_simple(model_at(server), ctx, options) as events:
            async for e in events:
                seen.append(e.type)
                if e.type == "text_delta":
                    scope.cancel(reason="the test stops at the first delta")
    assert scope.cancelled_caught and seen[-1] == "text_delta"
    assert pool_in_use(client) == 0


def test_registry_models_and_environment_credentials(tmp_path, monkeypatch) -> None:
    model = pt.get_model("google-vertex", "gemini-2.5-pro")
    assert (model.api, model.base_url) == (
        "google-vertex",
        "https://{location}-aiplatform.googleapis.com",
    )
    assert pt.get_env_api_key("google-vertex") is None  # no ADC file (HOME is empty)
    adc = tmp_path / "adc.json"
    adc.write_text("{}")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    assert pt.get_env_api_key("google-vertex") == "<authenticated>"  # file, project, location
    monkeypatch.setenv("GOOGLE_CLOUD_API_KEY", "AIza-express")
    assert pt.get_env_api_key("google-vertex") == "AIza-express"


async def test_an_api_key_from_the_environment_is_masked_too(server, client, monkeypatch) -> None:
    key = "AIza-vertex-express-KEY-0123"
    monkeypatch.setenv("GOOGLE_CLOUD_API_KEY", key)
    server.script(f"/vertex/v1{MODEL_PATH}", Status(400, {"error": {"message": f"bad {key}"}}))
    options = pt.StreamOptions(http_client=client)
    message = final(await collect(vertex_model(server.url + "/vertex"), options))
    assert message.error_message == "HTTP 400 Bad Request: bad ***"


async def test_a_token_fetch_cut_off_in_transit_is_retried(server, client, adc, caplog) -> None:
    caplog.set_level(logging.INFO, logger="pi_trio.providers")
    cut_off = SSE(['{"access_token": '], then="disconnect")  # requests raises: TransportError
    server.script("/token", cut_off, Status(200, TOKEN_ANSWER))
    server.script(ADC_PATH, SSE(TEXT))
    message = final(await run(server, client))
    assert message.stop_reason == "stop", message.error_message
    assert [r.path for r in server.requests] == ["/token", "/token", ADC_PATH]
    (retry,) = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert retry.startswith("preparing the request to http://127.0.0.1")
    assert "fetching a Google access token failed" in retry and "(retry 1 of 2)" in retry


async def test_a_token_endpoint_refusing_the_credentials_is_not_retried(
    server, client, adc
) -> None:
    refused = {"error": "invalid_grant", "error_description": "the subject token expired"}
    server.script("/token", Status(400, refused), Status(200, TOKEN_ANSWER))
    message = final(await run(server, client))
    assert message.stop_reason == "error"
    assert "invalid_grant" in (message.error_message or "")
    assert [r.path for r in server.requests] == ["/token"]


async def test_a_token_fetch_that_never_ends_is_bounded_by_the_overall_timeout(
    server, client, adc
) -> None:
    server.script("/token", NeverAnswer())
    message = final(await run(server, client, timeout=0.5))
    assert message.stop_reason == "error"
    assert "did not finish within the overall timeout" in (message.error_message or "")
    assert [r.path for r in server.requests] == ["/token"]  # the model was never asked


async def test_token_fetches_abandoned_at_their_deadline_hold_no_worker_threads(
    server, client, adc
) -> None:
    server.script("/token", NeverAnswer())
    for _ in range(3):
        message = final(await run(server, client, timeout=0.3))
        assert "did not finish within the overall timeout" in (message.error_message or "")
    # the first fetch's thread runs on (google-auth's own timeout); the other two waited in
    # Trio for it, and none of them holds one of Trio's default worker threads
    assert trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0
    assert [r.path for r in server.requests] == ["/token"]


async def test_cancel_while_the_token_is_being_fetched(server, client, adc) -> None:
    """The worker thread is abandoned: the caller's cancellation is prompt, nothing is sent."""
    server.script("/token", NeverAnswer())
    seen: list[str] = []

    async def consume() -> None:
        options = pt.StreamOptions(http_client=client)
        ctx = pt.Context(messages=[pt.UserMessage("Hi")])
        async with pt.stream_simple(model_at(server), ctx, options) as events:
            async for e in events:
                seen.append(e.type)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        # the worker thread reached the token endpoint (the server has no arrival event)
        while not server.requests:  # noqa: ASYNC110
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel(reason="the test cancels during the token fetch")
    assert seen == []
    assert [r.path for r in server.requests] == ["/token"]
