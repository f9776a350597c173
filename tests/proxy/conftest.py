"""Fixtures for proxy tests: a proxy server factory, its upstream and clients, per test.

Everything listens on 127.0.0.1 inside the test's nursery. The proxy's upstream HTTP client
is separate from the client that talks to the proxy, so each pool can be checked for leaks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio

import pi_trio as pt

from ..providers._server import ScriptedServer

TOKEN = "proxy-token-SECRET-0123456789"

StartProxy = Callable[..., Awaitable[pt.ProxyServer]]


@pytest.fixture
async def upstream(nursery: trio.Nursery) -> ScriptedServer:
    """A scripted provider server the proxy forwards to."""
    srv = ScriptedServer()
    await nursery.start(srv.serve)
    return srv


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """The client side's HTTP client (to the proxy)."""
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c


@pytest.fixture
async def upstream_client() -> AsyncIterator[httpx.AsyncClient]:
    """The proxy server's HTTP client (to the upstream provider)."""
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c


@pytest.fixture
def start_proxy(nursery: trio.Nursery, upstream_client: httpx.AsyncClient) -> StartProxy:
    async def start(**settings: Any) -> pt.ProxyServer:
        settings.setdefault("http_client", upstream_client)
        settings.setdefault("max_retries", 0)
        server = pt.ProxyServer(token=TOKEN, **settings)
        await nursery.start(server.serve)
        return server

    return start
