"""A throwaway PostgreSQL server for the tests (and for .ci/run), from the server's own binaries.

``start(directory)`` runs ``initdb`` and ``pg_ctl start`` on a fresh data directory in
``directory`` (as the ``postgres`` user when we are root: the server refuses to run as root),
listening on a Unix socket in that directory only (no TCP port at all unless ``tcp=True``, then
127.0.0.1 on an unused port), with fsync off (a test server: speed over durability); ``stop``
stops it. Command line, for .ci/run:

    python -m tests.sessions._pg start DIR [--tcp]   # prints the server's URL
    python -m tests.sessions._pg stop DIR
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

__all__ = ["binaries", "start", "stop"]


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
    subprocess.run(
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
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    options = (
        f"-c listen_addresses={'127.0.0.1' if tcp else chr(39) * 2} -c port={port} "
        f"-c unix_socket_directories={directory} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=200"
    )
    subprocess.run(
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
        check=True,
        stdout=subprocess.DEVNULL,
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


if __name__ == "__main__":
    command, where = sys.argv[1], Path(sys.argv[2])
    if command == "start":
        print(start(where, tcp="--tcp" in sys.argv[3:]))
    else:
        stop(where)
