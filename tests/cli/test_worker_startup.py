"""``pi-trio worker`` before it serves: a signal while the store still connects (here to a
server that accepts the connection and never answers) ends it at once, and an unparsable
store URL is one clean line that never shows the password."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import require_psycopg


@pytest.fixture(autouse=True)
def _psycopg() -> None:
    require_psycopg()  # a loud skip (or a failure in CI), never a silent one


ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "Sekr1tPw"


@pytest.fixture
def black_hole() -> Iterator[socket.socket]:
    """A listener on 127.0.0.1 that accepts and never says a word (a hung server)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)
    try:
        yield listener
    finally:
        listener.close()


def _worker(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pi_trio", "worker", "--store", url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("signum", "status", "said"),
    [(signal.SIGTERM, -signal.SIGTERM, ""), (signal.SIGINT, 130, "pi-trio: interrupted\n")],
)
def test_a_signal_while_the_store_connects_ends_the_worker_at_once(
    black_hole: socket.socket, signum: int, status: int, said: str
) -> None:
    port = black_hole.getsockname()[1]
    worker = _worker(f"postgresql://me:{PASSWORD}@127.0.0.1:{port}/db")
    try:
        connection, _ = black_hole.accept()  # the worker is connecting now, and waits
        with connection:
            worker.send_signal(signum)
            # not the connect timeout's "cannot connect" error, status 2, ten seconds on
            out, err = worker.communicate(timeout=30)
    finally:
        worker.kill()
        worker.wait()
    assert (worker.returncode, out, err) == (status, "", said)


def test_an_unparsable_store_url_is_one_line_without_the_password() -> None:
    password = PASSWORD
    worker = _worker(f"postgresql://me:{password}@[::1/db")  # "[" never closed
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 2
    assert 'in URI: "postgresql://me:***@[::1/db"' in err  # libpq's text, the password out
    assert password not in out + err
    assert err.startswith("pi-trio: error: cannot connect to the session store ")
    assert err.count("\n") == 1, err
