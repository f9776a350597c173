"""An entry is encoded when its event is applied: the log holds what happened, even when the
application changes the object afterwards, before the commit."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pi_trio as pt
from pi_trio.providers import faux


def _logged(path: Path, kind: str) -> list[dict[str, object]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT data FROM pi_trio_entries WHERE kind = ? ORDER BY seq", (kind,)
        ).fetchall()
    finally:
        db.close()
    return [json.loads(text) for (text,) in rows]


async def test_a_queued_message_changed_before_its_commit_is_logged_as_queued(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agents.db"
    scripted = faux.FauxModel([faux.assistant_message("ok")])
    note = pt.UserMessage([pt.TextContent("as steered")], timestamp=1)
    async with (
        pt.open_session_store(path) as store,
        store.open_agent(
            "s", initial_state=pt.AgentState(model=scripted.model), stream_fn=scripted
        ) as agent,
    ):
        agent.follow_up(note)  # noted now, committed by the run below
        assert isinstance(note.content, list)
        note.content.append(pt.TextContent("added later by the application"))
        await agent.prompt("go")
    (queued,) = _logged(path, "queued")
    assert queued["message"]["content"] == [{"type": "text", "text": "as steered"}]
