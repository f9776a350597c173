"""Which HTTP stack the default client is: httpx2's when it is installed, httpx's otherwise or
when ``PI_TRIO_HTTP_STACK=httpx`` says so; either one's pool is watched (admission and the
leak check need to see it)."""

from __future__ import annotations

import httpx
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import pool_in_use
from pi_trio.providers._http import STACK_VARIABLE, _pool_facts, default_client

from ._bodies import COMPLETIONS
from ._server import SSE, ScriptedServer

httpx2 = pytest.importorskip("httpx2")


async def ask(server: ScriptedServer) -> pt.AssistantMessage:
    """One request through the default client (a loopback model needs no key)."""
    model = COMPLETIONS.model(server.url)
    return await pt.complete_simple(model, pt.Context("", [pt.UserMessage("Hi")]))


async def test_httpx2_is_the_default_when_installed(monkeypatch) -> None:
    monkeypatch.delenv(STACK_VARIABLE, raising=False)
    assert isinstance(default_client(), httpx2.AsyncClient)


async def test_the_variable_keeps_httpx(monkeypatch) -> None:
    monkeypatch.setenv(STACK_VARIABLE, "httpx")
    assert isinstance(default_client(), httpx.AsyncClient)


@pytest.mark.parametrize("stack", ["httpx", "httpx2"])
async def test_the_default_client_of_either_stack_streams_and_returns_its_connection(
    server, monkeypatch, stack
) -> None:
    monkeypatch.setenv(STACK_VARIABLE, stack)
    server.script(COMPLETIONS.path, SSE(COMPLETIONS.text))
    message = await ask(server)
    assert message.stop_reason == "stop", message.error_message
    client = default_client()
    assert type(client).__module__.partition(".")[0] == stack
    facts = _pool_facts(client)
    assert facts is not None and facts.limit == 64  # the pool is seen: admission applies
    assert pool_in_use(client) == 0


async def test_a_bad_stack_name_is_the_streams_error(server, monkeypatch) -> None:
    monkeypatch.setenv(STACK_VARIABLE, "requests")
    message = await ask(server)
    assert message.stop_reason == "error"
    assert message.error_message == (
        "ValueError: PI_TRIO_HTTP_STACK must be httpx or httpx2, not 'requests'"
    )
    assert server.requests == []


def test_the_default_client_of_either_stack_is_closed_when_the_run_ends(monkeypatch) -> None:
    seen = []

    async def main() -> None:
        seen.append(default_client())

    for stack in ("httpx", "httpx2"):
        monkeypatch.setenv(STACK_VARIABLE, stack)
        trio.run(main)
    assert [type(c).__module__.partition(".")[0] for c in seen] == ["httpx", "httpx2"]
    assert all(c.is_closed for c in seen)
