"""The demo's last section: a durable session in an embedded SQLite store.

The session lives in a temporary ``agents.db``: one run with a parallel tool batch, then the
store is closed as a restarted service would lose it, reopened, the agent resumed from its log
and asked something more; finally the log itself is shown (entries by kind).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..agent import AgentState
from ..sessions import open_session_store

__all__ = ["durable_section"]

SESSION_ID = "demo-weather"


async def durable_section(
    state: AgentState,
    stream_fn: Any,
    subscribe: Callable[[Any], None],
    note: Callable[[str], None],
    first: str,
    then: str,
) -> tuple[int, int]:
    """Run ``first`` in a new durable session, reopen the store, resume and run ``then``.

    Returns (messages after the resume, log entries at the end).
    """
    with tempfile.TemporaryDirectory(prefix="pi-trio-demo-") as folder:
        path = Path(folder) / "agents.db"
        note(f"pt.open_session_store({path.name!r}): SQLite, nothing to install or start")
        async with (
            open_session_store(path) as store,
            store.open_agent(SESSION_ID, initial_state=state, stream_fn=stream_fn) as agent,
        ):
            agent.subscribe(subscribe)
            await agent.prompt(first)
            before = len(agent.state.messages)
        note(f"store closed with {before} messages logged: as if the service restarted")
        async with (
            open_session_store(path) as store,
            store.open_agent(SESSION_ID, initial_state=state, stream_fn=stream_fn) as agent,
        ):
            resumed = len(agent.state.messages)
            note(f"reopened: store.open_agent({SESSION_ID!r}) resumed {resumed} messages")
            agent.subscribe(subscribe)
            await agent.prompt(then)
            after = len(agent.state.messages)
        async with open_session_store(path) as store:
            entries = await store.load(SESSION_ID)
            kinds = Counter(entry.kind for entry in entries)
            sessions = await store.list_sessions()
        shown = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
        note(f"the log: {len(entries)} entries ({shown}); sessions in the store: {len(sessions)}")
        return after, len(entries)
