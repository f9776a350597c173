"""Sync tools run in threads of their own limiter (``pt.tool_thread_limiter()``): threads
abandoned by an abort (or a timeout) keep their tokens until they return, and never take the
threads of Trio's default limiter (DNS lookups, every other ``trio.to_thread`` user)."""

from __future__ import annotations

import threading
from typing import Any

import trio
import trio.testing

import pi_trio as pt

from .support import faux, make_scripted_agent


async def test_hung_sync_tools_take_their_own_threads_not_the_processes() -> None:
    release, running = threading.Event(), trio.Semaphore(0)

    def stuck(tool_call_id: str, params: Any, on_update: Any) -> str:
        trio.from_thread.run_sync(running.release)
        release.wait(30)
        return "finally"

    limiter = pt.tool_thread_limiter()
    assert limiter is pt.tool_thread_limiter()  # one per Trio run
    assert limiter.total_tokens == pt.tools.DEFAULT_TOOL_THREADS
    limiter.total_tokens = 2
    default = trio.to_thread.current_default_thread_limiter()
    default.total_tokens = 1  # a single hung tool in it would starve it
    tool = pt.AgentTool("stuck", "Stuck", "hangs", {"type": "object"}, stuck)
    batch = faux.assistant_message([faux.tool_call("stuck", {}, id=f"c{n}") for n in range(3)])
    agent, _ = make_scripted_agent([batch, faux.assistant_message("ok")], (tool,))
    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.prompt, "go")
                for _ in range(2):
                    await running.acquire()
                await trio.testing.wait_all_tasks_blocked()  # the third waits for a token
                agent.abort()
            assert limiter.borrowed_tokens == 2  # the abandoned threads keep theirs
            assert default.borrowed_tokens == 0
            assert await trio.to_thread.run_sync(lambda: "free") == "free"
    finally:
        release.set()
        default.total_tokens = 40

    async def take_a_token() -> None:
        async with limiter:  # given back by a thread as it returns
            pass

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(take_a_token)
