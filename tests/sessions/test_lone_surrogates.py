"""A lone surrogate in a message (``json.loads`` takes ``"\\ud83d"`` from a provider's JSON, and
an application's text may hold one) is stored as U+FFFD: neither SQLite nor PostgreSQL can
store the surrogate, and before, the commit that carried it failed, with every other session's
entries grouped into it."""

from __future__ import annotations

import json

import trio

import pi_trio as pt
from pi_trio.providers import faux

BROKEN = json.loads('"broken \\ud83d emoji, whole \\ud83d\\ude00"')


async def test_an_answer_with_a_lone_surrogate_is_logged_and_comes_back(store_url: str) -> None:
    scripted = faux.FauxModel([faux.assistant_message(BROKEN)])
    state = pt.AgentState(model=scripted.model)
    async with (
        pt.open_session_store(store_url) as store,
        store.open_agent("s", initial_state=state, stream_fn=scripted) as agent,
    ):
        await agent.prompt("hi")
    async with (
        pt.open_session_store(store_url) as store,
        store.open_agent("s", initial_state=state, stream_fn=scripted) as resumed,
    ):
        answer = resumed.state.messages[-1]
    assert isinstance(answer, pt.AssistantMessage)
    assert answer.content[0].text == "broken \ufffd emoji, whole \U0001f600"  # type: ignore[union-attr]


async def test_a_lone_surrogate_in_one_session_fails_no_other_s_commit(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:

        async def one(session_id: str, text: str) -> None:
            scripted = faux.FauxModel([faux.assistant_message(text)])
            state = pt.AgentState(model=scripted.model)
            async with store.open_agent(session_id, initial_state=state, stream_fn=scripted) as a:
                await a.prompt(text)

        async with trio.open_nursery() as nursery:  # their commits are grouped
            for index in range(4):
                nursery.start_soon(one, f"good-{index}", "fine")
            nursery.start_soon(one, "bad", BROKEN)
        for session_id in ("bad", *(f"good-{index}" for index in range(4))):
            kinds = [entry.kind for entry in await store.load(session_id)]
            assert kinds.count("message") == 2, (session_id, kinds)  # the prompt, the answer
