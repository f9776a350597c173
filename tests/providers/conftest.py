"""Fixtures for provider tests: the scripted server and an HTTP client, both per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from ._server import ScriptedServer


@pytest.fixture
async def server(nursery: trio.Nursery) -> ScriptedServer:
    srv = ScriptedServer()
    await nursery.start(srv.serve)
    return srv


@pytest.fixture(params=["httpx", "httpx2"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """An ``httpx.AsyncClient``, and an ``httpx2.AsyncClient``: the providers take either
    (the ``mcp`` SDK and others moved to httpx2; one process can then use one HTTP stack)."""
    stack = httpx if request.param == "httpx" else pytest.importorskip("httpx2")
    async with stack.AsyncClient(trust_env=False) as c:
        yield c
