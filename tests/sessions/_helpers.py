"""Shared pieces of the session tests: tools, scripts, and reading a store file directly."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import trio

import pi_trio as pt
from pi_trio.providers import faux

SCHEMA = {"type": "object", "properties": {"n": {"type": "number"}}}


def make_tool(
    name: str,
    execute: Callable[..., Any],
    *,
    replay: Literal["never", "safe"] = "never",
    execution_mode: Literal["sequential", "parallel"] | None = None,
) -> pt.AgentTool:
    return pt.AgentTool(
        name=name,
        label=name,
        description=f"the {name} tool",
        parameters=SCHEMA,
        execute=execute,
        replay=replay,
        execution_mode=execution_mode,
    )


def calls(*names: str, prefix: str = "c") -> pt.AssistantMessage:
    return faux.assistant_message(
        [faux.text("on it")]
        + [faux.tool_call(n, {"n": i}, id=f"{prefix}{i}") for i, n in enumerate(names)]
    )


def rows(path: Path | str, session_id: str = "s") -> list[tuple[int, str, Any, int]]:
    """(seq, kind, data, epoch) of every committed entry, read with a connection of our own
    (``path``: a SQLite file, or a PostgreSQL URL)."""
    if str(path).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(path)) as conn:
            found = conn.execute(
                "SELECT seq, kind, data::text, epoch FROM pi_trio_entries WHERE session_id = %s "
                "ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [(seq, kind, json.loads(data), epoch) for seq, kind, data, epoch in found]
    db = sqlite3.connect(path)
    try:
        found = db.execute(
            "SELECT seq, kind, data, epoch FROM pi_trio_entries WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
    finally:
        db.close()
    return [(seq, kind, json.loads(data), epoch) for seq, kind, data, epoch in found]


def kinds(path: Path | str, session_id: str = "s") -> list[str]:
    return [kind for _, kind, _, _ in rows(path, session_id)]


def snapshot(path: Path, copy: Path) -> None:
    """Exactly what a crash at this moment would leave on disk: every committed transaction."""
    source = sqlite3.connect(path)
    target = sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def gone_holder(path: Path) -> None:
    """Make the store file's holder a process that is gone (a crash copy's, say), so the next
    opener takes the session over at once."""
    db = sqlite3.connect(path)
    try:
        db.execute("UPDATE pi_trio_sessions SET holder_start = 'gone'")
        db.commit()
    finally:
        db.close()


def transcript_json(messages: list[pt.AgentMessage]) -> list[Any]:
    return [pt.to_json(message) for message in messages]


async def until(condition: Callable[[], object], seconds: float = 30) -> None:
    """Poll ``condition`` (work done by other threads or processes) until it is true."""
    with trio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 (other threads' work)
            await trio.sleep(0.02)


IDLE = (  # every session run to the end and given back, nothing left in an inbox
    "SELECT count(*) = 0 FROM pi_trio_sessions WHERE pending OR holder IS NOT NULL "
    "OR session_id IN (SELECT session_id FROM pi_trio_inbox)"
)
"""SQL for :class:`Raw`: true once a worker has nothing left to run (its runs finished, not
merely their inbox rows moved into the logs)."""


def answering_options(text: str = "done") -> dict[str, Any]:
    """``serve_sessions`` agent options: a scripted model that answers ``text`` every time."""
    import itertools

    model = faux.FauxModel(itertools.repeat(faux.assistant_message(text)))
    return {"initial_state": pt.AgentState(model=model.model), "stream_fn": model}
