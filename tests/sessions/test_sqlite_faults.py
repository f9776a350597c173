"""The SQLite store under faults of its file: several processes creating one file at once, a
full disk. Every sqlite3 error that reaches a caller is a SessionLogError naming the file, with
the driver's exception chained; a full disk is a SessionStoreError that keeps everything
written before, and the session goes on once there is room again."""

from __future__ import annotations

import errno
import multiprocessing
import os
import sqlite3
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

ROUNDS = 100


def _open_each(paths: list[str], barrier: Any, errors: Any) -> None:
    """In a child process: for each path, wait for the other process, then open the store."""

    async def one(path: str) -> None:
        async with pt.open_session_store(path) as store:
            await store.list_sessions()

    for path in paths:
        barrier.wait(timeout=60)
        try:
            trio.run(one, path)
        except Exception as exc:
            errors.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.slow  # two processes, a hundred new files
def test_two_processes_creating_one_file_at_once(tmp_path: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(2)
    errors = spawn.Queue()
    paths = [str(tmp_path / f"r{n}.db") for n in range(ROUNDS)]
    children = [spawn.Process(target=_open_each, args=(paths, barrier, errors)) for _ in "ab"]
    for child in children:
        child.start()
    for child in children:
        child.join(300)
        assert child.exitcode == 0
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
    for path in paths:  # and each file is one store, in WAL mode
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT count(*) FROM pi_trio_meta").fetchone() == (2,)
        db.close()


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 1 MiB tmpfs (mounting needs root): a disk that fills up for real."""
    if os.geteuid() != 0:
        message = "full-disk tests skipped: mounting a small tmpfs needs root"
        if os.environ.get("PI_TRIO_REQUIRE_TMPFS"):
            pytest.fail(f"{message} (and PI_TRIO_REQUIRE_TMPFS is set)", pytrace=False)
        warnings.warn(message, stacklevel=1)
        pytest.skip(message)
    where = Path(tempfile.mkdtemp(prefix="pi-trio-small-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


def _fill(disk: Path) -> Path:
    """Write a file until the disk is full; the file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


async def test_a_full_disk_keeps_the_log_and_the_session_goes_on_after(small_disk: Path) -> None:
    path = small_disk / "agents.db"
    model = faux.FauxModel(
        [faux.assistant_message("one"), faux.assistant_message("two"), faux.assistant_message("3")]
    )
    state = pt.AgentState(model=model.model)
    with pytest.raises(pt.SessionStoreError) as caught:
        async with (
            pt.open_session_store(path) as store,
            store.open_agent("s", initial_state=state) as agent,
        ):
            agent.stream_fn = model
            await agent.prompt("first")
            filler = _fill(small_disk)
            await agent.prompt("second " * 500)  # more than the pages left
            failed = agent.state.messages[-1]
            assert failed.stop_reason == "error"
            assert "disk full" not in failed.error_message  # the words are SQLite's own:
            assert "database or disk is full" in failed.error_message
    error = caught.value  # the block's end: what could not be committed
    assert error.problem == "disk full" and error.session_id == "s"
    assert str(path) in str(error) and isinstance(error.__cause__, sqlite3.OperationalError)
    filler.unlink()  # room again: the same process opens the session, and it goes on
    async with pt.open_session_store(path) as store, store.open_agent("s") as agent:
        assert [(m.role, m.content[0].text) for m in agent.state.messages] == [
            ("user", "first"),
            ("assistant", "one"),
        ]
        agent.stream_fn = model
        await agent.prompt("third")
        assert agent.state.messages[-1].stop_reason == "stop"
    async with pt.open_session_store(path) as store, store.open_agent("s") as agent:
        assert len(agent.state.messages) == 4


def test_a_row_sqlite_cannot_take_is_the_sessions_error_not_the_stores() -> None:
    # a worker sets such a session aside; a store error would leave it pending, to fail again
    from pi_trio.sessions._sqlite_faults import store_error

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x)")
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
    with pytest.raises(sqlite3.DataError) as caught:
        db.execute("INSERT INTO t VALUES (?)", ("x" * 5000,))
    error = store_error("s.db", caught.value, "s1")
    assert type(error) is pt.SessionLogError and error.problem == "DataError"
    assert error.session_id == "s1" and error.__cause__ is caught.value
