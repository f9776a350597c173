"""A worker that gives up on a session (sets it aside after a failure) gives up on the input it
claimed, never on input that came after: a message enqueued while it held the session, one
whose enqueue was in flight at the claim, one the holder had already moved into its log."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions._holders import new_holder

from ._helpers import until
from .conftest import Raw

pytestmark = pytest.mark.slow  # PostgreSQL, a second of a held lock


async def test_an_enqueue_in_flight_at_a_claim_keeps_the_session_from_that_claim(
    postgres_url: str,
) -> None:
    """Two enqueues commit in the opposite order to their inbox ids (the first one is slow);
    a claim between them must not read the later id as what it has seen, or giving up would
    set the slow message aside unread. The session's row is locked before an id is drawn:
    the claim skips the session until both are in, and their ids follow their commits."""
    raw = Raw("postgresql", postgres_url)
    async with (
        pt.open_session_store(postgres_url, lease_ttl=30) as first,
        pt.open_session_store(postgres_url, lease_ttl=30) as second,
        pt.open_session_store(postgres_url, lease_ttl=30) as worker,
    ):
        await first.enqueue("other", "make the tables")
        raw(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF position('slow' IN NEW.data::text) > 0 THEN PERFORM pg_sleep(1); END IF; "
            "RETURN NEW; END $$"
        )
        raw(
            "CREATE TRIGGER slow BEFORE INSERT ON pi_trio_inbox FOR EACH ROW "
            "EXECUTE FUNCTION slow()"
        )
        raw("UPDATE pi_trio_sessions SET pending = false")
        sleeping = (
            "SELECT count(*) FROM pg_stat_activity WHERE starts_with(query, 'INSERT INTO "
            "pi_trio_inbox') AND state = 'active'"
        )
        ids: dict[str, int] = {}

        async def enqueue(store: pt.SessionStore, text: str) -> None:
            ids[text] = await store.enqueue("s", text)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(enqueue, first, "slow")
            await until(lambda: raw(sleeping)[0][0] == 1)  # its id drawn, not committed
            nursery.start_soon(enqueue, second, "fast")
            await trio.sleep(0.2)  # before: committed by now, with the higher id
            claimed = await worker.backend.claim(new_holder("w"), 5)  # type: ignore[attr-defined]
        assert claimed == []  # before: a lease whose inbox_seen was the fast message's id
        assert ids["slow"] < ids["fast"]  # ids in commit order
        [lease] = await worker.backend.claim(new_holder("w"), 5)  # type: ignore[attr-defined]
        assert lease.inbox_seen == ids["fast"]


async def test_input_moved_into_the_log_after_the_claim_is_run_after_a_failure(
    postgres_url: str,
) -> None:
    """A message enqueued while the worker answers the first one is moved into the log (by
    the lease keeper); then the first answer's commit is refused (the session's own failure).
    The worker gives up on the first message only: the second is run by the next claim."""
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url, lease_ttl=0.6) as store:
        await store.enqueue("s", "first")
        raw(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF position('POISON' IN NEW.data::text) > 0 THEN RAISE EXCEPTION 'refused' "
            "USING ERRCODE = '22P05'; END IF; RETURN NEW; END $$"
        )
        raw(
            "CREATE TRIGGER refuse BEFORE INSERT ON pi_trio_entries FOR EACH ROW "
            "EXECUTE FUNCTION refuse()"
        )

        async def reply(context: pt.Context, options: Any, index: int) -> pt.AssistantMessage:
            said = context.messages[-1].content[0].text  # type: ignore[union-attr]
            if said == "first":
                await store.enqueue("s", "second")  # after the claim
                await until(lambda: raw("SELECT count(*) FROM pi_trio_inbox") == [(0,)])
                return faux.assistant_message("POISON")  # its commit is refused
            return faux.assistant_message(f"answer to {said}")

        model = faux.FauxModel(itertools.repeat(reply))
        options = {"initial_state": pt.AgentState(model=model.model), "stream_fn": model}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: pt.serve_sessions(store, options, poll_interval=0.2))
            done = "SELECT count(*) FROM pi_trio_entries WHERE data::text LIKE '%%to second%%'"
            await until(lambda: raw(done) == [(1,)], 10)  # before: set aside, never answered
            nursery.cancel_scope.cancel()
