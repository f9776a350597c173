"""pi 1.6's messages in a durable session: logged as pi's JSON with every field (a newer pi's
unknown ones too) and read back unchanged on resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions._entries import Note, encode

from ._helpers import transcript_json

TRACES = Path(__file__).parents[1] / "data" / "pi16" / "traces.json"


def _pi16_messages() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(TRACES.read_text())["messages"]
    return data


def test_pi_16_messages_are_logged_as_their_own_json() -> None:
    for data in _pi16_messages():
        with_future = {**data, "zzFuture": [1]}
        for item in (data, with_future):
            message = pt.from_json(item, pt.AgentMessage)  # type: ignore[arg-type]
            assert json.loads(encode(Note(1, "message", message, 0))[2]) == item


async def test_pi_16_messages_survive_a_durable_session_and_its_resume(store_url: str) -> None:
    # the transcript so far: pi 1.6's, handed to a prompt (its system messages included)
    earlier = [pt.from_json(m, pt.AgentMessage) for m in _pi16_messages()]
    future = {"role": "user", "content": "and now?", "timestamp": 9, "zzFuture": {"a": [1]}}
    prompt = pt.from_json(future, pt.AgentMessage)
    scripted = faux.FauxModel([faux.assistant_message("ok")])
    state = pt.AgentState(model=scripted.model)
    async with (
        pt.open_session_store(store_url) as store,
        store.open_agent("s", initial_state=state, stream_fn=scripted) as agent,
    ):
        await agent.prompt([*earlier, prompt])  # type: ignore[list-item]
        before = transcript_json(agent.state.messages)
    assert before[: len(earlier)] == _pi16_messages()
    assert before[len(earlier)] == future
    again = faux.FauxModel([faux.assistant_message("again")])
    url = store_url if "://" in store_url else f"sqlite://{store_url}"
    plain = pt.AgentState(model=again.model)
    async with (
        pt.open_session_store(url) as store,
        store.open_agent("s", initial_state=plain, stream_fn=again) as agent,
    ):
        assert transcript_json(agent.state.messages) == before
