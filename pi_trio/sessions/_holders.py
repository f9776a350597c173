"""Who holds a session: a holder's identity, and whether its process still runs.

A holder is a unique token plus its process (pid and the process's start), so that on one
machine a holder whose process is gone is known to be dead (SQLite takes its sessions over at
once) and a reused pid is not taken for a live holder. A holder of this very process is alive
while its block is open (:func:`holding` to :func:`let_go`): a block whose release failed (a
full disk) leaves its row naming it, and the process, still running, must not keep the
session from being opened again once the disk has room.
"""

from __future__ import annotations

import os
import socket

from ._backend import Holder

__all__ = ["holder_alive", "holding", "let_go", "new_holder", "process_start"]

_HOST = socket.gethostname()

_held: set[str] = set()
"""The tokens of this process's holders whose block is open (any store, any thread)."""


def holding(token: str) -> None:
    """``token``'s block is open from now on (before its lease is taken: never a moment
    when the row names it and it looks dead)."""
    _held.add(token)


def let_go(token: str) -> None:
    """``token``'s block has ended, whether or not its release reached the store."""
    _held.discard(token)


def process_start(pid: int) -> str | None:
    """An id of process ``pid``'s start, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()  # field 22 of stat(5): start time in clock ticks
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        pass
    try:  # no /proc: the pid's existence is all we can tell
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return ""


def holder_alive(pid: int | None, start: str | None, token: str) -> bool:
    """Whether holder ``token`` of process ``pid`` (started at ``start``) is still alive: its
    process runs on this machine, and when that is this process, its block is open."""
    if pid is None:
        return True  # a holder this backend cannot check: never taken over
    current = process_start(pid)
    if pid == os.getpid() and current is not None and (not start or start == current):
        return token in _held
    if current is None:
        return False
    return not start or not current or current == start


def new_holder(token: str) -> Holder:
    pid = os.getpid()
    return Holder(f"{token}@{_HOST}:{pid}", pid, process_start(pid) or "")
