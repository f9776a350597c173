"""docs/examples/embed_service.py runs: an agent per HTTP request, with a deadline."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import httpx
import pytest
import trio

import pi_trio as pt

from ..transcript import assert_transcript_valid
from ._helpers import ROOT


@pytest.fixture(scope="module")
def example() -> ModuleType:
    path = ROOT / "docs" / "examples" / "embed_service.py"
    spec = importlib.util.spec_from_file_location("embed_service", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["embed_service"] = module
    spec.loader.exec_module(module)
    return module


async def test_the_service_answers_and_enforces_its_deadline(
    example: ModuleType, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PI_TRIO_MODEL", raising=False)
    listeners = await nursery.start(example.serve, 0)
    port = listeners[0].socket.getsockname()[1]
    url = f"http://127.0.0.1:{port}/ask"
    async with httpx.AsyncClient(trust_env=False) as client:
        ok, slow, bad = [None] * 3

        async def ask_ok() -> None:
            nonlocal ok
            ok = await client.post(url, json={"question": "What is 12 * 7?", "deadline": 10})

        async def ask_slow() -> None:
            nonlocal slow
            slow = await client.post(url, json={"question": "Tell me more", "deadline": 0.2})

        async with trio.open_nursery() as requests:  # two requests at once, two agents
            requests.start_soon(ask_ok)
            requests.start_soon(ask_slow)
        bad = await client.post(url, content=b"{not json")
    assert ok is not None and ok.status_code == 200
    assert ok.json()["answer"] == "The answer is 84.0." and ok.json()["timedOut"] is False
    assert slow is not None and slow.status_code == 200
    data = slow.json()
    assert data["timedOut"] is True and data["stopReason"] == "aborted"
    assert data["answer"].startswith("Let me think")
    transcript = [pt.from_json(m, pt.AgentMessage) for m in data["transcript"]]
    assert_transcript_valid(transcript, aborted=True)
    assert bad.status_code == 400
