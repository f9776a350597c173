"""bedrock-converse-stream against Bedrock's own recorded event streams, served from 127.0.0.1:
SigV4 with keys from the environment, the binary frames, usage and stop reasons, and the
fault matrix every wire API passes."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import pool_in_use

from ._cloud import (
    AWS_ACCESS_KEY,
    AWS_SECRET,
    AWS_SESSION_TOKEN,
    BEDROCK_PATH,
    bedrock_model,
    collect,
    data,
    event,
    final,
    frame,
    set_aws_env,
    split_frames,
)
from ._server import SSE, NeverAnswer, ScriptedServer, Status

pytest.importorskip("botocore")

STREAM = "application/vnd.amazon.eventstream"
TEXT = split_frames(data("bedrock_nova_text.eventstream"))
TOOL = split_frames(data("bedrock_nova_tool_use.eventstream"))
THINKING = split_frames(data("bedrock_claude_thinking.eventstream"))
WEATHER = pt.Tool(
    "get_temperature",
    "Temperature in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def body(frames: list[bytes], **kwargs: Any) -> SSE:
    return SSE(frames, headers=[("content-type", STREAM)], **kwargs)


@pytest.fixture(autouse=True)
def aws_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    set_aws_env(
        monkeypatch,
        AWS_ACCESS_KEY_ID=AWS_ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=AWS_SECRET,
        AWS_SESSION_TOKEN=AWS_SESSION_TOKEN,
        AWS_REGION="eu-west-3",
    )


async def run(server: ScriptedServer, client: Any, **options: Any) -> list[Any]:
    return await collect(bedrock_model(server.url), pt.StreamOptions(http_client=client, **options))


async def test_recorded_text_stream_signed_with_sigv4(server, client) -> None:
    server.script(BEDROCK_PATH, body(TEXT))
    events = await run(server, client)
    types = [e.type for e in events]
    assert types[:2] == ["start", "text_start"] and types[-2:] == ["text_end", "done"]
    message = final(events)
    assert message.stop_reason == "stop"
    assert message.content[0].text.startswith("The capital of France is Paris.")
    assert message.content[0].text.endswith('"The City of Love."')
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (13, 82, 95)
    assert message.usage.cost.total == pytest.approx((13 * 1.0 + 82 * 2.0) / 1e6)
    assert (message.api, message.provider) == ("bedrock-converse-stream", "amazon-bedrock")
    request = server.requests[0]
    auth = request.headers["authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY}/")
    assert "/eu-west-3/bedrock/aws4_request" in auth  # the configured region signs
    assert "host" in auth and "x-amz-date" in auth  # signed headers
    assert request.headers["x-amz-security-token"] == AWS_SESSION_TOKEN
    assert AWS_SECRET not in str(request.headers) and AWS_SECRET.encode() not in request.body
    sent = request.json()
    assert sent["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]
    assert sent["system"] == [{"text": "You are terse."}]
    assert pool_in_use(client) == 0


async def test_frames_split_anywhere_decode_the_same(server, client) -> None:
    raw = b"".join(TEXT)
    server.script(BEDROCK_PATH, body([raw[i : i + 7] for i in range(0, len(raw), 7)]))
    message = final(await run(server, client))
    assert message.stop_reason == "stop" and message.content[0].text.endswith('Love."')


async def test_recorded_tool_use_stream(server, client) -> None:
    server.script(BEDROCK_PATH, body(TOOL))
    ctx = pt.Context(
        messages=[pt.UserMessage("Temperature in the capital of France?")], tools=[WEATHER]
    )
    events = await collect(bedrock_model(server.url), pt.StreamOptions(http_client=client), ctx)
    message = final(events)
    assert message.stop_reason == "toolUse"
    text, call = message.content
    assert isinstance(text, pt.TextContent) and text.text.startswith("<thinking> To find")
    assert isinstance(call, pt.ToolCall)
    assert (call.id, call.name, call.arguments) == (
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        "get_temperature",
        {"city": "Paris"},
    )
    assert [e.type for e in events if e.type.startswith("toolcall")] == [
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
    ]
    assert (message.usage.input, message.usage.output) == (471, 91)
    sent = server.requests[0].json()
    assert sent["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"] == {"json": WEATHER.parameters}


async def test_recorded_claude_reasoning_keeps_its_signature(server, client) -> None:
    model = bedrock_model(
        server.url, "us.anthropic.claude-sonnet-4-20250514-v1:0", reasoning=True, max_tokens=64_000
    )
    path = "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    server.script(path, body(THINKING))
    options = pt.StreamOptions(http_client=client, reasoning="medium")
    message = final(await collect(model, options))
    thinking, text = message.content
    assert isinstance(thinking, pt.ThinkingContent)
    assert thinking.thinking.startswith('The user has greeted me with a simple "Hello".')
    assert (thinking.thinking_signature or "").startswith("Eu0CCkgIBxABGAIq")
    assert isinstance(text, pt.TextContent) and text.text.endswith("How can I help you today?")
    sent = server.requests[0].json()
    thinking_field = sent["additionalModelRequestFields"]["thinking"]
    assert thinking_field == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert sent["inferenceConfig"]["maxTokens"] == 32_000 + 8192  # pi-ai grows it by the budget


async def test_tool_results_and_reasoning_go_back_in_bedrocks_shape(server, client) -> None:
    model = bedrock_model(server.url, "us.anthropic.claude-sonnet-4-20250514-v1:0")
    path = "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    server.script(path, body(TEXT))
    assistant = pt.AssistantMessage(
        [
            pt.ThinkingContent("hmm", thinking_signature="sig=="),
            pt.ToolCall("call-1", "get_temperature", {"city": "Paris"}),
            pt.ToolCall("call-2", "get_temperature", {"city": "Lyon"}),
        ],
        "bedrock-converse-stream",
        "amazon-bedrock",
        model.id,
        pt.Usage(),
        "toolUse",
    )
    results = [
        pt.ToolResultMessage("call-1", "get_temperature", [pt.TextContent("18 C")]),
        pt.ToolResultMessage("call-2", "get_temperature", [pt.TextContent("no")], is_error=True),
    ]
    ctx = pt.Context(messages=[pt.UserMessage("go"), assistant, *results], tools=[WEATHER])
    await collect(model, pt.StreamOptions(http_client=client), ctx)
    sent = server.requests[0].json()["messages"]
    assert sent[1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig=="}}
    }
    assert sent[1]["content"][1]["toolUse"]["toolUseId"] == "call-1"
    results_sent = sent[2]["content"]
    assert [r["toolResult"]["status"] for r in results_sent[:2]] == ["success", "error"]
    assert results_sent[-1] == {"cachePoint": {"type": "default"}}  # Claude 4: cached prefix


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("guardrail_intervened", "a Bedrock guardrail intervened"),
        ("content_filtered", "Bedrock's content filter blocked the response"),
    ],
)
async def test_a_filtered_stop_is_an_error_naming_the_filter(server, client, reason, words) -> None:
    stop = event("messageStop", {"stopReason": reason})
    server.script(BEDROCK_PATH, body([*TEXT[:3], stop, TEXT[-1]]))
    message = final(await run(server, client))
    assert message.stop_reason == "error"
    assert message.error_message == f"{words} (stopReason {reason})"
    assert message.content[0].text.startswith("The capital")  # what came is kept


async def test_max_tokens_is_length(server, client) -> None:
    server.script(
        BEDROCK_PATH, body([*TEXT[:3], event("messageStop", {"stopReason": "max_tokens"})])
    )
    assert final(await run(server, client)).stop_reason == "length"


async def test_an_exception_frame_is_an_error_with_pis_prefix(server, client) -> None:
    throttled = frame(
        {"message": "Too many tokens, please wait before trying again."},
        exception_type="throttlingException",
        content_type="application/json",
        message_type="exception",
    )
    server.script(BEDROCK_PATH, body([*TEXT[:3], throttled]))
    events = await run(server, client)
    assert final(events).error_message == (
        "Throttling error: Too many tokens, please wait before trying again."
    )
    assert events[-1].provider_error.kind == "rate_limit"


async def test_disconnect_mid_stream_keeps_partial_content(server, client) -> None:
    server.script(BEDROCK_PATH, body(TEXT[:3], then="disconnect"))
    message = final(await run(server, client))
    assert message.stop_reason == "error"
    assert "connection closed" in (message.error_message or "")
    assert message.content[0].text == "The capital of France is Paris."
    assert len(server.requests) == 1  # content was out: never retried


async def test_a_stream_that_ends_before_message_stop_is_an_error(server, client) -> None:
    server.script(BEDROCK_PATH, body(TEXT[:3]))
    message = final(await run(server, client))
    assert message.error_message == (
        "connection closed before the response was complete (no messageStop)"
    )


async def test_a_frame_with_a_bad_checksum_is_an_error(server, client) -> None:
    broken = bytearray(TEXT[3])
    broken[-8] ^= 0xFF  # a payload byte: the message CRC no longer matches
    server.script(BEDROCK_PATH, body([*TEXT[:3], bytes(broken), *TEXT[4:]]))
    message = final(await run(server, client))
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("invalid event-stream frame: ")
    assert "Checksum" in (message.error_message or "")


async def test_malformed_json_in_a_frame_is_an_error(server, client) -> None:
    server.script(BEDROCK_PATH, body([*TEXT[:3], event("contentBlockDelta", b"{oops"), *TEXT[3:]]))
    message = final(await run(server, client))
    assert (message.error_message or "").startswith("invalid JSON in event 'contentBlockDelta'")


async def test_429_with_retry_after_then_success(server, client) -> None:
    server.script(
        BEDROCK_PATH,
        Status(429, {"message": "Too many requests"}, headers=[("retry-after", "0.01")]),
        body(TEXT),
    )
    events = await run(server, client)
    assert final(events).stop_reason == "stop"
    assert [e.type for e in events].count("start") == 1
    assert len(server.requests) == 2


async def test_500_then_success(server, client) -> None:
    server.script(BEDROCK_PATH, Status(500, {"message": "Internal"}), body(TEXT))
    assert final(await run(server, client)).stop_reason == "stop"
    assert len(server.requests) == 2


async def test_403_shows_awss_text_without_the_secrets(server, client) -> None:
    echo = {"message": f"The security token {AWS_SESSION_TOKEN} is invalid ({AWS_SECRET})"}
    server.script(BEDROCK_PATH, Status(403, echo))
    message = final(await run(server, client))
    assert message.error_message == "HTTP 403 Forbidden: The security token *** is invalid (***)"
    assert len(server.requests) == 1


async def test_an_error_status_names_the_exception_aws_sent_in_its_header(server, client) -> None:
    refused = {"message": "The provided model identifier is invalid."}
    kind = "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
    server.script(BEDROCK_PATH, Status(400, refused, headers=[("x-amzn-errortype", kind)]))
    events = await run(server, client)
    assert final(events).error_message == (
        "HTTP 400 Bad Request: The provided model identifier is invalid. (ValidationException)"
    )
    assert events[-1].provider_error.code == "ValidationException"


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        ("aws.protocols#ThrottlingException:http://x", "Slow down (ThrottlingException)"),
        ("x" * 12_000, "Slow down"),  # not an exception's name: the server's text, not shown
        ("not a name", "Slow down"),
    ],
)
async def test_only_an_exception_s_name_is_taken_from_the_header(
    server, client, header: str, shown: str
) -> None:
    reply = Status(400, {"message": "Slow down"}, headers=[("x-amzn-errortype", header)])
    server.script(BEDROCK_PATH, reply)
    events = await run(server, client)
    assert final(events).error_message == f"HTTP 400 Bad Request: {shown}"
    assert events[-1].provider_error.code in (None, "ThrottlingException")


async def test_slow_drip_inside_one_frame_hits_the_idle_timeout(server, client) -> None:
    first = TEXT[1]
    drip = [first[i : i + 10] for i in range(0, len(first), 10)]
    server.script(BEDROCK_PATH, body([TEXT[0], *drip], interval=0.05))
    message = final(await run(server, client, idle_timeout=0.3))
    assert (
        message.error_message
        == "timeout: no event from the server for 0.3 s (the stream went idle)"
    )


async def test_server_never_answers(server, client) -> None:
    server.script(BEDROCK_PATH, NeverAnswer())
    message = final(await run(server, client, first_byte_timeout=0.1, max_retries=1))
    assert message.error_message == "timeout: no response from the server within 0.1 s"
    assert len(server.requests) == 2
    assert pool_in_use(client) == 0


async def test_cancel_mid_stream_leaks_nothing(server, client) -> None:
    server.script(BEDROCK_PATH, body(TEXT[:3], then="stall"))
    seen: list[str] = []
    with trio.CancelScope() as scope:
        options = pt.StreamOptions(http_client=client)
        async with pt.stream_simple(
            bedrock_model(server.url), pt.Context(messages=[pt.UserMessage("Hi")]), options
        ) as events:
            async for e in events:
                seen.append(e.type)
                if e.type == "text_delta":
                    scope.cancel(reason="the test stops at the first delta")
    assert scope.cancelled_caught and seen[-1] == "text_delta"
    assert pool_in_use(client) == 0
    server.script(BEDROCK_PATH, body(TEXT))
    assert final(await run(server, client)).stop_reason == "stop"


async def test_a_bearer_token_replaces_sigv4(server, client, monkeypatch) -> None:
    set_aws_env(monkeypatch, AWS_BEARER_TOKEN_BEDROCK="bedrock-api-key-TEST-123456")
    server.script(BEDROCK_PATH, body(TEXT))
    assert final(await run(server, client)).stop_reason == "stop"
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer bedrock-api-key-TEST-123456"
    assert "x-amz-date" not in headers


async def test_missing_credentials_name_the_variables(monkeypatch) -> None:
    set_aws_env(monkeypatch)
    events = await collect(bedrock_model("https://bedrock.example.invalid"), pt.StreamOptions())
    assert [e.type for e in events] == ["error"]
    assert final(events).error_message == (
        "No AWS credentials for provider amazon-bedrock (set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK)"
    )
    assert events[0].provider_error.kind == "auth"


async def test_without_botocore_the_error_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore.session", None)  # import fails
    events = await collect(bedrock_model("https://bedrock.example.invalid"), pt.StreamOptions())
    assert [e.type for e in events] == ["error"]
    assert "pip install 'pi-trio[bedrock]'" in (final(events).error_message or "")


async def test_secrets_never_reach_a_log_record(server, client, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {"message": f"bad token {AWS_SESSION_TOKEN} {AWS_SECRET}"}
    server.script(BEDROCK_PATH, Status(403, echo, headers=[("x-echo", AWS_SESSION_TOKEN)]))
    await run(server, client)
    assert caplog.records
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "")
        assert AWS_SECRET not in text and AWS_SESSION_TOKEN not in text, (record.name, text)


def test_the_standard_endpoint_follows_the_configured_region(monkeypatch) -> None:
    from pi_trio.providers._aws import _region_and_endpoint

    standard = "https://bedrock-runtime.us-east-1.amazonaws.com"
    set_aws_env(monkeypatch, AWS_REGION="eu-west-3")
    assert _region_and_endpoint(standard, None) == (
        "eu-west-3",
        "https://bedrock-runtime.eu-west-3.amazonaws.com",
    )
    assert _region_and_endpoint("https://proxy.example/bedrock", None) == (
        "eu-west-3",
        "https://proxy.example/bedrock",
    )
    set_aws_env(monkeypatch)
    assert _region_and_endpoint(standard, None) == ("us-east-1", standard)
    assert _region_and_endpoint("https://bedrock-runtime.ap-south-1.amazonaws.com", None)[0] == (
        "ap-south-1"
    )


async def test_agent_runs_a_tool_through_bedrock(server, client) -> None:
    """The recorded tool call, the tool run by the agent, the result sent back, the answer."""
    server.script(BEDROCK_PATH, body(TOOL), body(TEXT))

    async def temperature(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent(f"30 C in {params['city']}")])

    tool = pt.AgentTool(
        WEATHER.name, WEATHER.name, WEATHER.description, WEATHER.parameters, temperature
    )
    state = pt.AgentState(system_prompt="Be brief.", model=bedrock_model(server.url), tools=[tool])
    agent = pt.Agent(state, stream_options=pt.StreamOptions(http_client=client))
    await agent.prompt("Temperature in the capital of France?")
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    second = server.requests[1].json()["messages"]
    assert second[-1]["content"][0]["toolResult"] == {
        "toolUseId": "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        "content": [{"text": "30 C in Paris"}],
        "status": "success",
    }
    assert agent.state.error_message is None


def test_registry_models_and_environment_credentials(monkeypatch) -> None:
    model = pt.get_model("amazon-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert (model.api, model.base_url) == (
        "bedrock-converse-stream",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    )
    assert pt.get_env_api_key("amazon-bedrock") == "<authenticated>"  # pi-ai's answer
    set_aws_env(monkeypatch)
    assert pt.get_env_api_key("amazon-bedrock") is None
    set_aws_env(monkeypatch, AWS_PROFILE="dev")
    assert pt.get_env_api_key("amazon-bedrock") == "<authenticated>"


async def test_the_signature_matches_the_request_as_it_arrived(server, client) -> None:
    """What AWS checks: the signature recomputed from the request the server received (the
    path as sent, %3A included, the Host header httpx wrote, the body bytes) is the one sent.
    A request changed after signing (re-encoded path, another host, re-serialized body)
    would be refused by Bedrock with 403 SignatureDoesNotMatch."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    server.script(BEDROCK_PATH, body(TEXT))
    await run(server, client)
    received = server.requests[0]
    authorization = received.headers["authorization"]
    signed_names = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    request = AWSRequest(
        method="POST",
        url=f"http://{received.headers['host']}{received.path}",
        data=received.body,
        headers={name: received.headers[name] for name in signed_names},
    )
    request.context["timestamp"] = received.headers["x-amz-date"]
    signer = SigV4Auth(
        Credentials(AWS_ACCESS_KEY, AWS_SECRET, AWS_SESSION_TOKEN), "bedrock", "eu-west-3"
    )
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    assert authorization.endswith(f"Signature={expected}")
    assert received.path == BEDROCK_PATH


async def test_a_profile_is_read_once_and_its_credentials_kept(
    server, client, tmp_path, monkeypatch
):
    """AWS_PROFILE with a real ``credential_process`` (a script counting its runs): the
    credentials sign the request, and a second request reuses them (botocore refreshes
    them itself before they expire) instead of running the process again."""
    runs = tmp_path / "runs"
    script = tmp_path / "creds.py"
    script.write_text(
        "import json, pathlib\n"
        f"p = pathlib.Path({str(runs)!r})\n"
        "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
        f"print(json.dumps({{'Version': 1, 'AccessKeyId': 'AKIDPROFILE', "
        f"'SecretAccessKey': {AWS_SECRET!r}, 'Expiration': '2999-01-01T00:00:00Z'}}))\n"
    )
    config = tmp_path / "config"
    config.write_text(
        f"[profile dev]\nregion = ap-south-1\ncredential_process = {sys.executable} {script}\n"
    )
    set_aws_env(monkeypatch, AWS_PROFILE="dev")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    server.script(BEDROCK_PATH, body(TEXT))
    assert final(await run(server, client)).stop_reason == "stop"
    assert final(await run(server, client)).stop_reason == "stop"
    auth = server.requests[0].headers["authorization"]
    assert "Credential=AKIDPROFILE/" in auth and "/ap-south-1/bedrock/" in auth  # the profile's
    assert runs.read_text() == "x"


async def test_a_frame_over_max_event_bytes_is_refused_before_it_is_buffered(
    server, client
) -> None:
    server.script(BEDROCK_PATH, body(TEXT))
    message = final(await run(server, client, max_event_bytes=150))
    size = next(len(f) for f in TEXT if len(f) > 150)  # the first frame over the limit
    assert (message.error_message or "").startswith(
        f"the server sent an event-stream frame of {size} bytes (max_event_bytes)"
    )


async def test_a_body_that_is_not_frames_is_an_error(server, client) -> None:
    server.script(BEDROCK_PATH, body([b"\x00\x00\x00\x05hello"]))
    message = final(await run(server, client))
    assert message.error_message == "invalid event-stream frame: a length of 5 bytes"


def test_a_mangled_frame_with_good_checksums_is_an_invalid_frame() -> None:
    """Frames mangled inside (a header's name or type, its length) whose checksums are made
    right again: each is ``invalid event-stream frame``, never a bare UnicodeDecodeError,
    KeyError or struct.error from botocore's decoder (before: a third of them)."""
    import random
    import struct
    import zlib

    from pi_trio.providers import ProviderFailure
    from pi_trio.providers._aws import EventStreamParser

    good = event("contentBlockDelta", {"delta": {"text": "hi"}, "contentBlockIndex": 0})
    (head_length,) = struct.unpack(">I", good[4:8])
    rng = random.Random(39)
    outcomes: set[str] = set()
    for _ in range(2_000):
        mangled = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            mangled[12 + rng.randrange(head_length)] = rng.randrange(256)
        body = bytes(mangled[:-4])
        body = body[:8] + struct.pack(">I", zlib.crc32(body[:8])) + body[12:]
        try:
            EventStreamParser(1 << 20).feed(body + struct.pack(">I", zlib.crc32(body)))
            outcomes.add("read")
        except ProviderFailure as exc:
            assert str(exc).startswith("invalid event-stream frame")
            outcomes.add("refused")
    assert outcomes == {"read", "refused"}
