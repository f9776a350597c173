"""Shared set-up of the Vertex and Bedrock tests: the recorded bodies (tests/data/cloud, see
SOURCES.md there), AWS event-stream frames for the fault cases, and models pointed at the
scripted server."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pi_trio as pt

DATA = Path(__file__).resolve().parent.parent / "data" / "cloud"

AWS_ACCESS_KEY = "AKIDEXAMPLETESTKEY01"
AWS_SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY-SECRET-TEST"
AWS_SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLE-SESSION-TOKEN-TEST-0123456789"
NOVA = "us.amazon.nova-micro-v1:0"
BEDROCK_PATH = "/model/us.amazon.nova-micro-v1%3A0/converse-stream"


def data(name: str) -> bytes:
    return (DATA / name).read_bytes()


def split_frames(body: bytes) -> list[bytes]:
    """A recorded event-stream body cut into its frames (by each frame's length prefix)."""
    frames = []
    while body:
        total = int.from_bytes(body[:4], "big")
        frames.append(body[:total])
        body = body[total:]
    return frames


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    )


def frame(payload: Any, **headers: str) -> bytes:
    """One event-stream frame (for the fault cases the recordings lack): ``headers`` are
    given without their leading ":" and with "_" for "-" (``event_type="messageStop"``)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    head = b"".join(_header(":" + k.replace("_", "-"), v) for k, v in headers.items())
    total = 12 + len(head) + len(body) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + body
    return message + struct.pack(">I", zlib.crc32(message))


def event(event_type: str, payload: Any) -> bytes:
    return frame(
        payload, event_type=event_type, content_type="application/json", message_type="event"
    )


def set_aws_env(monkeypatch: Any, **env: str) -> None:
    """Only the AWS variables given (plus no config files, no instance metadata)."""
    import os

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def bedrock_model(base_url: str, model_id: str = NOVA, **changes: Any) -> pt.Model:
    fields: dict[str, Any] = {
        "name": "Test model",
        "input": ("text", "image"),
        "cost": pt.ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=4.0),
        "max_tokens": 4096,
    }
    fields.update(changes)
    return pt.Model(
        id=model_id,
        api="bedrock-converse-stream",
        provider="amazon-bedrock",
        base_url=base_url,
        **fields,
    )


def vertex_model(base_url: str, model_id: str = "gemini-2.5-flash", **changes: Any) -> pt.Model:
    return pt.Model(
        id=model_id,
        name="Test model",
        api="google-vertex",
        provider="google-vertex",
        base_url=base_url,
        reasoning=True,
        input=("text", "image"),
        cost=pt.ModelCost(input=1.0, output=2.0, cache_read=0.5),
        max_tokens=4096,
        **changes,
    )


async def collect(
    model: pt.Model, options: pt.StreamOptions, context: pt.Context | None = None
) -> list[Any]:
    ctx = context or pt.Context(system_prompt="You are terse.", messages=[pt.UserMessage("Hi")])
    async with pt.stream_simple(model, ctx, options) as events:
        return [e async for e in events]


def final(events: list[Any]) -> pt.AssistantMessage:
    last = events[-1]
    return last.message if isinstance(last, pt.StreamDone) else last.error
