"""A worker paused (SIGSTOP) past its leases, then resumed: it writes nothing more to the
sessions it held (their leases expired while it slept) and logs one line per lost session,
no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

import pi_trio as pt

from ._helpers import until
from .conftest import Raw

pytestmark = [
    pytest.mark.slow,  # a worker process, paused for two of its leases
    pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP needs POSIX"),
]

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ("s0", "s1", "s2")


def _worker(url: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "pi_trio", "worker", "--store", url, "--lease-ttl", "2",
             "--concurrency", "3", "--delay", "0.05"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


async def test_a_paused_worker_writes_nothing_and_says_so_once(
    postgres_url: str, tmp_path: Path
) -> None:
    raw = Raw("postgresql", postgres_url)
    log = tmp_path / "worker.log"
    worker = _worker(postgres_url, log)
    try:
        async with pt.open_session_store(postgres_url) as store:
            for sid in SESSIONS:
                await store.enqueue(sid, "tell me a long story")
        # all three held and answering (the scripted model writes a word every 50 ms)
        held = "SELECT count(*) FROM pi_trio_sessions WHERE holder IS NOT NULL"
        await until(lambda: raw(held) == [(3,)])
        await until(lambda: raw("SELECT count(*) FROM pi_trio_entries") != [(0,)])
        worker.send_signal(signal.SIGSTOP)
        await trio.sleep(0.2)  # stopped by now: what it notes from here on, it notes after
        paused_at = int(time.time() * 1000)
        epochs = dict(raw("SELECT session_id, epoch FROM pi_trio_sessions"))
        await trio.sleep(4)  # two leases
        worker.send_signal(signal.SIGCONT)
        # it finds its leases lost (and may claim the sessions again, under new epochs)
        await until(lambda: log.read_text().count("this holder lost it") >= len(SESSIONS))
        await trio.sleep(1)  # what it might still write under the old ones
        # a commit it had sent before it stopped may land late (the server is slow, or the
        # transaction was half sent): those entries were noted before the pause; none noted
        # after it is under a paused lease
        late = (
            "SELECT count(*) FROM pi_trio_entries WHERE session_id = ? AND epoch = ? AND time > ?"
        )
        for sid, epoch in epochs.items():
            assert raw(late, sid, epoch, paused_at) == [(0,)], sid
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    text = log.read_text()
    assert "Traceback" not in text, text
    for sid in SESSIONS:
        said = [line for line in text.splitlines() if f"session {sid!r}" in line]
        assert len(said) == 1, said
        assert "this holder lost it" in said[0]  # (from the watchdog, or from a commit)
