"""A throwaway PostgreSQL server for the tests (and for .ci/run), from the server's own binaries.

``start(directory)`` runs ``initdb`` and ``pg_ctl start`` on a fresh data directory in
``directory`` (as the ``postgres`` user when we are root: the server refuses to run as root),
listening on a Unix socket in that directory only (no TCP port at all unless ``tcp=True``, then
127.0.0.1 on an unused port), with fsync off (a test server: speed over durability); ``stop``
stops it. ``throwaway()`` is both, for a test run: a watcher process stops the server and
removes its directory when the run ends, however it ends (SIGTERM and SIGKILL included, which
skip the run's own clean-up). Command line, for .ci/run:

    python -m tests.sessions._pg start DIR [--tcp]   # prints the server's URL
    python -m tests.sessions._pg stop DIR
    python -m tests.sessions._pg watch DIR           # stops it when its stdin closes
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["binaries", "start", "stop", "throwaway"]


def binaries() -> Path | None:
    """The directory of ``initdb``/``pg_ctl`` (``$PI_TRIO_PG_BIN``, Debian's newest, or PATH)."""
    if "PI_TRIO_PG_BIN" in os.environ:
        return Path(os.environ["PI_TRIO_PG_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> int:
    try:
        return int(Path(path).parts[-3])
    except ValueError:
        return 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _as_server_user(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


def _run(args: list[str], *, log: Path | None = None) -> None:
    """Run a server command; a failure says what the command printed (and the server's log)."""
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode == 0:
        return
    said = done.stderr.strip().splitlines()[-3:]
    if log is not None and log.exists():
        said += log.read_text(errors="replace").strip().splitlines()[-3:]
    name = Path(args[args.index("--") + 1] if "--" in args else args[0]).name
    raise RuntimeError(f"{name} failed with status {done.returncode}: {' / '.join(said)}")


def start(directory: Path, *, tcp: bool = False) -> str:
    """Start a server with its data and socket in ``directory``; its URL (user ``postgres``,
    database ``postgres``, trust authentication on the socket, password on TCP)."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb) found")
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "data"
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    port = _free_port()
    _run(
        _as_server_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        )
    )
    options = (
        f"-c listen_addresses={'127.0.0.1' if tcp else chr(39) * 2} -c port={port} "
        f"-c unix_socket_directories={directory} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=200"
    )
    _run(
        _as_server_user(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(directory / "server.log"),
                "-o",
                options,
                "-w",
                "start",
            ]
        ),
        log=directory / "server.log",
    )
    (directory / "port").write_text(str(port))
    return f"postgresql://postgres@/postgres?host={directory}&port={port}"


def stop(directory: Path) -> None:
    bin_dir = binaries()
    if bin_dir is None or not (directory / "data").is_dir():
        return
    subprocess.run(
        _as_server_user(
            [str(bin_dir / "pg_ctl"), "-D", str(directory / "data"), "-m", "immediate", "stop"]
        ),
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextmanager
def throwaway(*, tcp: bool = False) -> Iterator[str]:
    """A fresh server in a new temp directory for the block; its URL.

    A watcher process (in its own session, so a Ctrl-C or a signal to the run's process group
    leaves it be) holds a pipe from this process and stops the server when the pipe closes:
    at the end of the block, or when this process dies without running its clean-up.

    Raises:
        RuntimeError: the server could not start (what ``initdb``/``pg_ctl`` said).
    """
    directory = Path(tempfile.mkdtemp(prefix="pi-trio-pg-", dir="/tmp"))
    watcher = subprocess.Popen(
        [sys.executable, "-m", "tests.sessions._pg", "watch", str(directory)],
        stdin=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
        start_new_session=True,
    )
    try:
        yield start(directory, tcp=tcp)
    finally:
        assert watcher.stdin is not None
        watcher.stdin.close()  # the watcher stops the server and removes the directory
        watcher.wait()


def _watch(directory: Path) -> None:
    try:
        sys.stdin.buffer.read()  # until the run closes the pipe, or dies
    finally:
        stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    command, where = sys.argv[1], Path(sys.argv[2])
    if command == "start":
        print(start(where, tcp="--tcp" in sys.argv[3:]))
    elif command == "watch":
        _watch(where)
    else:
        stop(where)
