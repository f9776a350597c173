"""The throwaway PostgreSQL server of a test run stops when the run ends, however it ends:
a run killed by SIGTERM or SIGKILL runs none of its own clean-up, and its server must not
outlive it (tests/sessions/_pg.py's watcher)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from ..support import no_postgres, require_psycopg
from . import _pg

ROOT = Path(__file__).resolve().parents[2]

A_RUN = """
import time
from tests.sessions import _pg
with _pg.throwaway() as url:
    print(url, flush=True)
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow  # a server started and stopped per case
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_leaves_no_server_behind(signum: int) -> None:
    if _pg.binaries() is None:
        no_postgres("no server binaries (install postgresql)")
    run = subprocess.Popen(
        [sys.executable, "-c", A_RUN], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert run.stdout is not None
        url = run.stdout.readline()
        assert url.startswith("postgresql://"), url
        directory = Path(urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["host"][0])
        server = int((directory / "data" / "postmaster.pid").read_text().split()[0])
        assert _alive(server)
        run.send_signal(signum)
        run.wait(15)
        deadline = time.monotonic() + 30
        while (_alive(server) or directory.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        run.kill()
        run.wait()
    assert not _alive(server), f"the server ({server}) outlived its run"
    assert not directory.exists()


def test_a_server_that_cannot_start_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """The skip reason carries what initdb printed, not just "exit status 1"."""
    fake = Path(tempfile.mkdtemp(prefix="pi-trio-fake-pg-", dir="/tmp"))
    try:
        fake.chmod(0o755)  # the postgres user runs it when we are root
        initdb = fake / "initdb"
        initdb.write_text('#!/bin/sh\necho "initdb: error: No space left on device" >&2\nexit 1\n')
        initdb.chmod(0o755)
        monkeypatch.setenv("PI_TRIO_PG_BIN", str(fake))
        with pytest.raises(RuntimeError, match=r"initdb failed with status 1: .*No space left"):
            _pg.start(fake / "server")
    finally:
        shutil.rmtree(fake, ignore_errors=True)


def test_without_psycopg_the_skip_is_loud_and_ci_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    monkeypatch.delenv("PI_TRIO_REQUIRE_POSTGRES", raising=False)
    with (
        pytest.warns(UserWarning, match="psycopg is not installed"),
        pytest.raises(pytest.skip.Exception, match="psycopg is not installed"),
    ):
        require_psycopg()
    monkeypatch.setenv("PI_TRIO_REQUIRE_POSTGRES", "1")
    with pytest.raises(pytest.fail.Exception, match="PI_TRIO_REQUIRE_POSTGRES is set"):
        require_psycopg()
