"""The process of the grouped-commit crash test: many agents on one store, killed while one
transaction holds entries of many of their sessions.

``drive_many`` runs ``count`` sessions of the crash test's script (:mod:`._crash_child`) in one
process, on one SQLite store. The first grouped transaction that holds entries of at least
``spread`` sessions is held at ``moment``: ``"open"``, its rows inserted but not committed;
``"committed"``, committed but none of its waiters woken. Either way the process writes the
batch's ``(session, seq)`` pairs to ``marker`` and sleeps until the parent SIGKILLs it. The
hold is this test's own wrapper of the backend's group insert, installed in this process only.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions import _sqlite

from . import _crash_child as child


def _hold_grouped_transaction(moment: str, spread: int, marker: str) -> None:
    insert = _sqlite.SqliteBackend._append_group

    def append_group(self: Any, db: sqlite3.Connection, group: list[Any]) -> None:
        sessions = {request.args[0].session_id for request in group}
        if len(sessions) < spread:
            insert(self, db, group)
            return
        rows = [(r.args[0].session_id, row[0]) for r in group for row in r.args[1]]
        db.execute("BEGIN IMMEDIATE")  # the group's insert runs inside this transaction
        insert(self, db, group)
        if moment == "committed":
            db.execute("COMMIT")
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, json.dumps(rows).encode())
        os.close(fd)
        time.sleep(120)  # the parent kills the process here

    _sqlite.SqliteBackend._append_group = append_group  # type: ignore[method-assign]


def drive_many(db: str, count: int, folder: str, seed: int, moment: str, marker: str) -> None:
    """Run ``count`` sessions at once until the held transaction (see the module doc)."""
    _hold_grouped_transaction(moment, max(2, count // 2), marker)

    async def one(store: pt.SessionStore, index: int, go: trio.Event) -> None:
        session = f"g{index}"
        effects, seen = (os.path.join(folder, f"{kind}-{session}") for kind in ("e", "s"))
        scripted = faux.FauxModel(child.script(session, seed + index), token_delay=0.0005)
        state = pt.AgentState(model=scripted.model, tools=child.tools(effects, seed + index))
        async with store.open_agent(session, initial_state=state, stream_fn=scripted) as agent:

            def listener(event: pt.AgentEvent) -> None:
                if isinstance(event, pt.MessageEnd):
                    child._append(seen, json.dumps(pt.to_json(event.message)))

            agent.subscribe(listener)
            agent.follow_up(f"one more thing for {session}")
            await go.wait()
            await agent.prompt(f"start {session}")
        child._append(seen, "FINISHED")

    async def main() -> None:
        async with pt.open_session_store(db) as store, trio.open_nursery() as nursery:
            go = trio.Event()
            for index in range(count):
                nursery.start_soon(one, store, index, go)
            await trio.sleep(0.05)  # every session open before any starts
            go.set()

    trio.run(main)
