"""Fixtures for provider tests: the scripted server and an HTTP client, both per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from pi_trio.providers._http import STACK_VARIABLE

from ._server import ScriptedServer


@pytest.fixture
async def server(nursery: trio.Nursery) -> ScriptedServer:
    srv = ScriptedServer()
    await nursery.start(srv.serve)
    return srv


def _stacks() -> list[str]:
    """Both HTTP stacks, or only the one ``$PI_TRIO_HTTP_STACK`` names (CI runs the provider
    tests once per stack: the injected clients and the default client then agree)."""
    chosen = os.environ.get(STACK_VARIABLE, "").strip().lower()
    return [chosen] if chosen else ["httpx", "httpx2"]


@pytest.fixture(params=_stacks())
def http_stack(request: pytest.FixtureRequest) -> Any:
    """The module ``httpx`` or ``httpx2``: the providers take a client of either (the ``mcp``
    SDK, openai and others moved to httpx2; one process can then use one HTTP stack)."""
    return httpx if request.param == "httpx" else pytest.importorskip("httpx2")


@pytest.fixture
async def client(http_stack: Any) -> AsyncIterator[Any]:
    """An ``httpx.AsyncClient`` and an ``httpx2.AsyncClient`` (see :func:`http_stack`)."""
    async with http_stack.AsyncClient(trust_env=False) as c:
        yield c
