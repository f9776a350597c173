"""Fixtures for provider tests: the scripted server and an HTTP client, both per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from ._server import ScriptedServer


@pytest.fixture
async def server(nursery: trio.Nursery) -> ScriptedServer:
    srv = ScriptedServer()
    await nursery.start(srv.serve)
    return srv


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c
