"""What only the PostgreSQL store has: expiring leases kept alive by their block, the inbox of
``store.enqueue``, passwords kept out of every message, psycopg only when asked for."""

from __future__ import annotations

import logging
import secrets
import subprocess
import sys
import traceback
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions._holders import new_holder
from pi_trio.sessions._pg_schema import redact, scrub

from .conftest import Raw, with_database

ROOT = Path(__file__).resolve().parents[2]


def _raw(url: str) -> Raw:
    return Raw("postgresql", url)


async def test_a_database_of_another_application_is_refused(postgres_url: str) -> None:
    _raw(postgres_url)("CREATE TABLE pi_trio_meta (key text PRIMARY KEY, value text)")
    _raw(postgres_url)("INSERT INTO pi_trio_meta VALUES ('application', 'someone.else')")
    with pytest.raises(pt.SessionLogError, match="is not a pi_trio session store"):
        async with pt.open_session_store(postgres_url):
            pass
    assert _raw(postgres_url)("SELECT count(*) FROM pi_trio_meta") == [(1,)]  # untouched


async def test_bad_json_is_refused_when_written_and_nothing_is(postgres_url: str) -> None:
    async with pt.open_session_store(postgres_url) as store:
        lease = await store.backend.acquire("s", new_holder("w"))
        assert not isinstance(lease, str)
        with pytest.raises(pt.SessionLogError, match="invalid input syntax for type json"):
            await store.backend.append(lease, [(1, "run_start", "{}", 1, 1), (2, "x", "{no", 2, 1)])
        assert await store.load("s") == []
        await store.backend.append(lease, [(1, "run_start", "{}", 1, 1)])  # the store goes on
        assert [e.kind for e in await store.load("s")] == ["run_start"]


def _tcp_url(server: str, user: str, password: str, database: str) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(server).query)
    port = query["port"][0]
    return f"postgresql://{user}:{urllib.parse.quote(password)}@127.0.0.1:{port}/{database}"


async def test_a_password_is_never_in_a_message_or_description(
    postgres_server: str, postgres_url: str
) -> None:
    secret, role = "s3cret-Hunter2", f"agent_{secrets.token_hex(4)}"
    _raw(postgres_url)(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{secret}'")
    database = urllib.parse.urlsplit(postgres_url).path.lstrip("/")
    wrong = _tcp_url(postgres_server, role, "wrong-" + secret, database)
    with pytest.raises(pt.SessionLogError) as caught:
        async with pt.open_session_store(wrong):
            pass
    assert "password authentication failed" in str(caught.value)
    assert secret not in str(caught.value) and secret not in repr(caught.value)
    right = _tcp_url(postgres_server, role, secret, database)
    async with pt.open_session_store(right) as store:
        assert secret not in store.backend.description and secret not in repr(store)
        assert (
            store.backend.description == f"postgresql://{role}@127.0.0.1:{right.rsplit(':', 1)[1]}"
        )
        assert await store.list_sessions() == []
    _raw(postgres_url)(f"REASSIGN OWNED BY {role} TO postgres")
    _raw(postgres_url)(f"DROP ROLE {role}")


@pytest.mark.parametrize(
    "url",
    [
        # a generated password holding "/" left unescaped (quote() keeps "/"): urlsplit ends
        # the authority there, libpq does not, and its error quotes the password
        "postgresql://postgres:s3cr3tPW/%3A%40@127.0.0.1:1/db",
        "postgresql://postgres:s3cr3tPW@[::1:1/db",  # unparsable
        "postgresql://postgres@127.0.0.1:1/db?password=s3cr3tPW&sslmode=bogus",
        # libpq decodes a parameter's name: this is the password too
        "postgresql://postgres@127.0.0.1:1/db?%70assword=s3cr3tPW&sslmode=bogus",
        "postgresql://postgres@127.0.0.1:1/db?sslpassword=s3cr3tPW&sslmode=bogus",
        # libpq reads the password up to the "@": "?" and "#" are part of it
        "postgresql://postgres:s3cr3tPW?x@127.0.0.1:1/db",
        "postgresql://postgres:s3cr3tPW#x@127.0.0.1:1/db",
    ],
)
async def test_a_password_in_an_odd_url_is_never_shown(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(pt.SessionLogError) as caught:
        async with pt.open_session_store(url, reconnect_for=0.1):
            pass
    shown = "".join(traceback.format_exception(caught.value)) + caplog.text
    assert "s3cr3tPW" not in shown
    assert "s3cr3tPW" not in redact(url) and "s3cr3tPW" not in scrub(f"bad {url}", url)


def test_psycopg_is_imported_only_for_a_postgresql_store() -> None:
    code = (
        "import sys, trio, pi_trio as pt\n"
        "assert 'psycopg' not in sys.modules, 'import pi_trio imported psycopg'\n"
        "sys.modules['psycopg'] = None  # as if it were not installed\n"
        "async def main():\n"
        "    async with pt.open_session_store('postgresql://u:pw@localhost/db'):\n"
        "        pass\n"
        "try:\n"
        "    trio.run(main)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "pip install 'pi-trio[postgres]'" in out.stdout


async def test_a_lease_that_expired_is_lost_even_before_anyone_takes_it(
    postgres_url: str,
) -> None:
    async with pt.open_session_store(postgres_url, lease_ttl=0.3) as store:
        backend = store.backend
        first = await backend.acquire("s", new_holder("one"))
        assert not isinstance(first, str) and first.ttl == 0.3
        assert isinstance(await backend.acquire("s", new_holder("two")), str)
        await backend.append(first, [(1, "run_start", "{}", 1, 1)])
        await trio.sleep(0.5)  # real time: the server's clock decides
        with pytest.raises(pt.SessionBusyError, match="its lease expired"):
            await backend.append(first, [(2, "run_end", "{}", 2, 1)])
        assert (await store.list_sessions())[0].holder is None
        second = await backend.acquire("s", new_holder("two"))
        assert not isinstance(second, str) and (second.epoch, second.last_seq) == (2, 1)
        with pytest.raises(pt.SessionBusyError, match="now at epoch 2"):
            await backend.append(first, [(2, "run_end", "{}", 2, 1)])
        assert [e.seq for e in await store.load("s")] == [1]


@pytest.mark.slow  # waits through lease renewals
async def test_the_block_renews_its_lease_and_stops_when_it_loses_it(postgres_url: str) -> None:
    started = trio.Event()

    async def forever(call_id: str, params: Any, on_update: Any) -> str:
        started.set()
        await trio.sleep_forever()
        return "never"  # pragma: no cover

    tool = pt.AgentTool("forever", "forever", "runs forever", {"type": "object"}, forever)
    scripted = faux.FauxModel([faux.assistant_message([faux.tool_call("forever", {}, id="c")])])
    state = pt.AgentState(model=scripted.model, tools=[tool])
    raw = _raw(postgres_url)
    async with pt.open_session_store(postgres_url, lease_ttl=0.6) as store:
        with pytest.raises(pt.SessionBusyError, match="this holder lost it") as caught:
            async with (
                store.open_agent("s", initial_state=state, stream_fn=scripted) as agent,
                trio.open_nursery() as nursery,
            ):
                nursery.start_soon(agent.prompt, "go")
                await started.wait()
                await trio.sleep(1.5)  # well past the lease's ttl: renewed meanwhile
                assert isinstance(await store.backend.acquire("s", new_holder("x")), str)
                count = len(await store.load("s"))
                raw("UPDATE pi_trio_sessions SET epoch = epoch + 1")  # taken over
                await trio.sleep(5)
                pytest.fail("the block must be stopped")  # pragma: no cover
        assert type(caught.value) is pt.SessionBusyError  # plain, not a group
        assert not agent.is_running
        assert len(await store.load("s")) == count  # nothing written after it was lost


async def test_enqueue_is_durable_at_once_and_the_holder_moves_it_into_its_log(
    postgres_url: str,
) -> None:
    scripted = faux.FauxModel([faux.assistant_message("one"), faux.assistant_message("two")])
    state = pt.AgentState(model=scripted.model)
    async with pt.open_session_store(postgres_url, lease_ttl=0.6) as front:
        first = await front.enqueue("s", "hello")  # a new session: created by its inbox
        assert _raw(postgres_url)("SELECT id, kind FROM pi_trio_inbox") == [(first, "follow_up")]
        with pytest.raises(ValueError, match="kind must be"):
            await front.enqueue("s", "x", kind="later")  # type: ignore[arg-type]
        async with pt.open_session_store(postgres_url, lease_ttl=0.6) as worker:
            async with worker.open_agent("s", initial_state=state, stream_fn=scripted) as agent:
                assert [m.message.content[0].text for m in agent.queued()] == ["hello"]  # type: ignore[union-attr]
                second = await front.enqueue("s", "now", kind="steer")
                inbox = _raw(postgres_url)
                with trio.fail_after(3):
                    # moved in at a renewal: into the agent's queue, then one commit that logs
                    # it and deletes its row (the queue shows it a moment before that commit)
                    while len(agent.queued()) < 2 or inbox("SELECT id FROM pi_trio_inbox"):  # noqa: ASYNC110
                        await trio.sleep(0.05)
            queued = [e.data for e in await worker.load("s") if e.kind == "queued"]
    assert [(q["queue"], q["inbox"]) for q in queued] == [("followUp", first), ("steer", second)]


async def test_enqueue_needs_an_inbox(tmp_path: Path) -> None:
    async with pt.open_session_store(tmp_path / "a.db") as store:
        with pytest.raises(TypeError, match="needs a store with an inbox"):
            await store.enqueue("s", "hello")


async def test_with_database_keeps_the_server(postgres_server: str) -> None:
    assert with_database(postgres_server, "x").split("?")[0].endswith("/x")


async def test_an_append_waits_for_a_takeover_in_flight_and_then_writes_nothing(
    postgres_url: str,
) -> None:
    import psycopg

    async with pt.open_session_store(postgres_url) as store:
        lease = await store.backend.acquire("s", new_holder("one"))
        assert not isinstance(lease, str)
        other = psycopg.connect(postgres_url)
        try:  # another holder's takeover, not committed yet
            other.execute("UPDATE pi_trio_sessions SET epoch = epoch + 1, holder = 'two'")
            failed: list[BaseException] = []

            async def append() -> None:
                try:
                    await store.backend.append(lease, [(1, "run_start", "{}", 1, 1)])
                except pt.SessionBusyError as exc:
                    failed.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(append)
                await trio.sleep(0.3)
                assert failed == []  # still waiting for the takeover's row lock
                other.commit()
        finally:
            other.close()
        assert len(failed) == 1 and "now at epoch 2" in str(failed[0])
        assert await store.load("s") == []


@pytest.mark.slow  # waits out a lease
async def test_a_holder_that_waited_for_the_session_keeps_its_whole_lease(
    postgres_url: str,
) -> None:
    async with pt.open_session_store(postgres_url, lease_ttl=0.6) as store:
        order: list[str] = []

        async def second() -> None:
            async with store.open_agent("s", wait=True) as agent:
                order.append("second in")
                await trio.sleep(0.8)  # longer than a ttl: its own lease is renewed
                agent.follow_up("still mine")
            order.append("second out")

        async with trio.open_nursery() as nursery, store.open_agent("s"):
            nursery.start_soon(second)
            await trio.sleep(1.2)  # the second waits two ttls
            order.append("first out")
    assert order == ["first out", "second in", "second out"]
    assert [e.kind for e in await _load(postgres_url, "s")][-1] == "queued"


async def _load(url: str, session_id: str) -> list[pt.SessionEntry]:
    async with pt.open_session_store(url) as store:
        return await store.load(session_id)


async def test_pi_trio_sessions_lists_a_postgresql_store(postgres_url: str) -> None:
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("from-the-web", "hello")
    done = await trio.run_process(
        [sys.executable, "-m", "pi_trio", "sessions", "--store", postgres_url, "list"],
        cwd=ROOT,
        capture_stdout=True,
    )
    assert done.stdout.decode().startswith("from-the-web\t0 entries")


@pytest.mark.parametrize("refusal", ["rows", "store", "store at commit"])
async def test_a_refused_commit_fails_alone_in_its_group(postgres_url: str, refusal: str) -> None:
    """``rows``: session b's row is JSON the server cannot take (a SessionLogError); ``store``:
    a trigger refuses b's rows for a reason of the store's own (a privilege: a
    SessionStoreError). Either way g, committed in the same group, goes through (before, the
    second failed every session of the group)."""
    import psycopg

    async with pt.open_session_store(postgres_url, connections=1) as store:
        backend = store.backend
        leases = {name: await backend.acquire(name, new_holder(name)) for name in "wgb"}
        if refusal != "rows":  # a deferred trigger is checked at COMMIT
            when = "DEFERRABLE INITIALLY DEFERRED" if refusal == "store at commit" else ""
            Raw("postgresql", postgres_url)(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "IF NEW.session_id = 'b' THEN RAISE EXCEPTION 'no grant' USING ERRCODE = "
                "'42501'; END IF; RETURN NEW; END $$; CREATE CONSTRAINT TRIGGER refuse AFTER "
                f"INSERT ON pi_trio_entries {when} FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        blocker = psycopg.connect(postgres_url)
        try:  # the store's one connection waits on this lock...
            blocker.execute("SELECT 1 FROM pi_trio_sessions WHERE session_id = 'w' FOR UPDATE")
            outcomes: dict[str, Any] = {}

            async def append(name: str, data: str) -> None:
                try:
                    await backend.append(leases[name], [(1, "run_start", data, 1, 1)])
                    outcomes[name] = "ok"
                except pt.SessionLogError as exc:
                    outcomes[name] = exc

            async with trio.open_nursery() as nursery:
                nursery.start_soon(append, "w", "{}")
                await trio.sleep(0.2)
                nursery.start_soon(append, "g", "{}")  # ...while these two queue up: one group
                nursery.start_soon(append, "b", "{no json" if refusal == "rows" else "{}")
                await trio.sleep(0.2)
                blocker.rollback()
        finally:
            blocker.close()
        assert outcomes["w"] == outcomes["g"] == "ok"
        failed = outcomes["b"]
        assert "session 'b': the store refused this commit" in str(failed)
        assert isinstance(failed, pt.SessionStoreError) == (refusal != "rows")
        assert failed.session_id == "b"
        assert [len(await store.load(name)) for name in "wgb"] == [1, 1, 0]


async def test_a_postgresql_store_is_a_leased_backend(postgres_url: str) -> None:
    from pi_trio.sessions._backend import LeasedBackend, as_leased

    async with pt.open_session_store(postgres_url) as store:
        assert isinstance(store.backend, LeasedBackend)
        assert as_leased(store.backend) is store.backend
        assert as_leased(store.backend) is store.backend  # the cached answer, the same


async def test_a_decision_never_brings_a_deleted_session_back(postgres_url: str) -> None:
    """``store.approve()`` checks the log, then puts the decision in the inbox; a delete in
    between left the decision's enqueue to make the session again, pending with nothing but
    a decision. The enqueue of a decision now finds no session and says so."""
    raw = Raw("postgresql", postgres_url)
    async with pt.open_session_store(postgres_url) as store:
        data = '{"toolCallId": "c1", "approved": true, "reason": ""}'
        with pytest.raises(pt.SessionNotFoundError, match="'gone'"):
            await store.backend.enqueue("gone", "decision", data, 1)  # type: ignore[attr-defined]
        await store.enqueue("here", "hi")  # a message still makes its session
    assert raw("SELECT session_id FROM pi_trio_sessions") == [("here",)]
    assert raw("SELECT session_id FROM pi_trio_inbox") == [("here",)]
