"""Round 2 scenarios on durable sessions: S1d, S5d (beside their in-memory runs) and S8 resume.

Each durable scenario runs the in-memory scenario and the durable one back to back in the same
process (in-memory first, then the SQLite store in a fresh temp dir), so the ratio compares like
with like on a noisy machine. CPU time is reported beside wall time.
"""

from __future__ import annotations

import gc
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

import pi_trio as pt

from . import _script as script
from ._agents import Counter
from ._common import collector_time
from .impl_memory import s1_turns, s5_many_agents


async def _s1_durable(turns: int, path: Path) -> tuple[float, float, int]:
    counter = Counter()
    model = script.scripted(script.noop_answers(turns))
    state = pt.AgentState(model=model.model, tools=[script.NOOP])
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s1d", initial_state=state, stream_fn=model) as agent,
    ):
        agent.subscribe(counter.listener())
        start, cpu = time.perf_counter(), time.process_time()
        await agent.prompt("Go.")
        await agent.wait_for_idle()
        elapsed, cpu_used = time.perf_counter() - start, time.process_time() - cpu
        entries = len(await store.load("s1d"))
    return elapsed, cpu_used, entries


async def s1d_turns(turns: int) -> dict[str, Any]:
    start = time.process_time()
    memory = await s1_turns(turns)
    memory_cpu = (time.process_time() - start) / (turns + 1) * 1e6
    with tempfile.TemporaryDirectory() as tmp:
        elapsed, cpu, entries = await _s1_durable(turns, Path(tmp) / "s1d.db")
    per_turn = elapsed / (turns + 1) * 1e6
    in_memory = memory["figures"]["us_per_turn"]
    return {
        "figures": {
            "us_per_turn": per_turn,
            "in_memory_us_per_turn": in_memory,
            "ratio_to_memory": per_turn / in_memory,
            "cpu_us_per_turn": cpu / (turns + 1) * 1e6,
            "in_memory_cpu_us_per_turn": memory_cpu,
        },
        "info": {"entries": entries},
    }


async def s5d_durable(agents: int, turns: int) -> tuple[float, float, int]:
    """S5's agents on one SQLite store (temp dir): wall and CPU seconds of the runs (opening
    the sessions is not timed), and the events delivered."""
    run = await _s5d_durable(agents, turns)
    return run["wall_s"], run["cpu_s"], run["events"]


async def _s5d_durable(agents: int, turns: int) -> dict[str, Any]:
    """:func:`s5d_durable`'s figures, with the CPU seconds of the Trio thread (the rest is the
    store's thread) and of the cyclic garbage collector, both during the runs only."""
    counter = Counter()
    listener = counter.listener()
    with tempfile.TemporaryDirectory() as tmp, collector_time() as collector:
        async with pt.open_session_store(Path(tmp) / "s5d.db") as store:

            async def one(index: int, ready: trio.Event, go: trio.Event) -> None:
                model = script.scripted(script.noop_answers(turns))
                state = pt.AgentState(model=model.model, tools=[script.NOOP])
                async with store.open_agent(
                    f"agent-{index}", initial_state=state, stream_fn=model
                ) as agent:
                    agent.subscribe(listener)
                    ready.set()
                    await go.wait()
                    await agent.prompt("Go.")

            go = trio.Event()
            async with trio.open_nursery() as nursery:
                for index in range(agents):  # opening the sessions is not timed
                    ready = trio.Event()
                    nursery.start_soon(one, index, ready, go)
                    await ready.wait()
                start, cpu, trio_cpu = time.perf_counter(), time.process_time(), time.thread_time()
                collected = collector.seconds
                go.set()
            return {
                "wall_s": time.perf_counter() - start,
                "cpu_s": time.process_time() - cpu,
                "trio_thread_cpu_s": time.thread_time() - trio_cpu,
                "gc_s": collector.seconds - collected,
                "events": counter.events,
            }


async def s5d_many_agents(agents: int, turns: int) -> dict[str, Any]:
    cpu = time.process_time()
    with collector_time() as memory_collector:
        memory = await s5_many_agents(agents, turns)
    memory_cpu = time.process_time() - cpu
    durable = await _s5d_durable(agents, turns)
    in_memory = memory["figures"]["wall_s"]
    return {
        "figures": {
            "wall_s": durable["wall_s"],
            "in_memory_wall_s": in_memory,
            "ratio_to_memory": durable["wall_s"] / in_memory,
            "cpu_s": durable["cpu_s"],
            "in_memory_cpu_s": memory_cpu,
            "cpu_ratio_to_memory": durable["cpu_s"] / memory_cpu,
            # where the durable CPU goes: the Trio thread (the rest is the store's thread), and
            # the cyclic garbage collector's share of it (both threads' collections); each GC
            # figure covers what its CPU figure covers (the in-memory one: the whole call)
            "trio_thread_cpu_s": durable["trio_thread_cpu_s"],
            "gc_s": durable["gc_s"],
            "in_memory_gc_s": memory_collector.seconds,
        },
        "info": {"events": durable["events"]},
    }


async def s1d_durable(turns: int) -> None:
    """S1 on a SQLite store in a temp dir (for instruction counts)."""
    with tempfile.TemporaryDirectory() as tmp:
        await _s1_durable(turns, Path(tmp) / "s1d.db")


async def s8_resume(turns: int) -> dict[str, Any]:
    """Load + repair a ``turns``-turn session whose last batch was interrupted."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s8.db"
        model = script.scripted(script.noop_answers(turns - 1))
        state = pt.AgentState(model=model.model, tools=[script.NOOP])
        async with pt.open_session_store(path) as store:
            async with store.open_agent("s8", initial_state=state, stream_fn=model) as agent:
                await agent.prompt("Go.")
            # the interrupted tail: one more tool turn logged up to the call's intent
            backend = store.backend
            lease = await backend.acquire("s8", _holder())
            assert not isinstance(lease, str)
            last = lease.last_seq
            message = script.tool_turn("noop", [{}], turns)
            call = message.tool_calls[0]
            tail = [
                (last + 1, "run_start", "{}", 0, 1),
                (last + 2, "message", _dumps(pt.to_json(pt.UserMessage("again"))), 0, 1),
                (last + 3, "message", _dumps(pt.to_json(message)), 0, 1),
                (last + 4, "tool_intent", _dumps({"toolCallId": call.id, "toolName": "noop",
                                                  "arguments": {}}), 0, 1),
            ]  # fmt: skip
            await backend.append(lease, tail)
            await backend.release(lease)
        # as in a restarted process: the run that wrote the log is gone (here its agent, its
        # scripted model's record of 1,000 requests), so the collector's first full pass
        # during the resume does not walk a heap the resume did not make
        del agent, model
        gc.collect()
        timings = []
        messages = 0
        for _ in range(5):
            async with pt.open_session_store(path) as store:
                start, cpu = time.perf_counter(), time.process_time()
                async with store.open_agent("s8", initial_state=state, wait=True) as agent:
                    timings.append((time.perf_counter() - start, time.process_time() - cpu))
                    messages = len(agent.state.messages)
    return {
        "figures": {
            "resume_ms": timings[0][0] * 1e3,
            "resume_cpu_ms": timings[0][1] * 1e3,
            "resume_again_ms": min(wall for wall, _ in timings[1:]) * 1e3,
        },
        "info": {"messages": messages},
    }


def _holder() -> Any:
    from pi_trio.sessions._holders import new_holder

    return new_holder("bench")


def _dumps(data: Any) -> str:
    import json

    return json.dumps(data)
