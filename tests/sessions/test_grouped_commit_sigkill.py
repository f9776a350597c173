"""SIGKILL while one grouped transaction holds entries of many sessions (issue 39).

A child runs eight agents on one SQLite store; the first transaction that groups entries of
at least four of their sessions is held, either open (rows inserted, not committed) or just
committed with none of its waiters told, and the parent kills the process there. Then: the
held batch's rows are all in the log (committed) or none of them (open), and each session,
resumed in a new process, keeps every promise of the crash test (a valid transcript, every
message a listener saw, no tool run twice, no result a tool never produced) and answers a new
prompt.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from . import _crash_child as child
from . import _group_crash_child as group_child
from . import test_crash

pytestmark = pytest.mark.slow  # real processes, killed with SIGKILL

SESSIONS = 8


def _logged(db: Path) -> set[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return set(conn.execute("SELECT session_id, seq FROM pi_trio_entries").fetchall())


@pytest.mark.parametrize("moment", ["open", "committed"])
def test_sigkill_inside_a_grouped_transaction_keeps_every_sessions_promises(
    tmp_path: Path, moment: str
) -> None:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([group_child.__name__])
    db, marker = tmp_path / "group.db", tmp_path / "held"

    def run(target: Any, *args: Any) -> multiprocessing.process.BaseProcess:
        process = context.Process(target=target, args=args)
        process.start()
        return process

    driver = run(group_child.drive_many, str(db), SESSIONS, str(tmp_path), 7, moment, str(marker))
    deadline = time.monotonic() + 60
    while not marker.exists() and driver.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # the marker is written whole before the process sleeps
    assert marker.exists(), "no transaction grouped entries of half the sessions"
    driver.kill()  # SIGKILL, inside the held transaction
    driver.join(30)
    held = {(sid, seq) for sid, seq in json.loads(marker.read_text())}
    assert len({sid for sid, _ in held}) >= SESSIONS // 2
    logged = _logged(db)
    if moment == "committed":
        assert held <= logged, "a committed batch lost rows"
    else:
        assert not held & logged, "rows of an uncommitted batch are in the log"

    for index in range(SESSIONS):
        session = f"g{index}"
        effects, seen, out = (tmp_path / f"{kind}-{session}" for kind in ("e", "s", "o"))
        resumer = run(child.resume, str(db), session, str(effects), str(out), 7 + index)
        resumer.join(60)
        assert resumer.exitcode == 0, f"{session}: resume failed ({resumer.exitcode})"
        test_crash._check(
            session,
            json.loads(out.read_text()),
            test_crash._lines(seen),
            test_crash._lines(effects),
        )
