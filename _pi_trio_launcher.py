"""The ``pi-trio`` command's first module: Ctrl-C while the library loads is one quiet line.

Importing pi_trio (Trio, httpx, attrs, cattrs) takes a few tenths of a second, and a Ctrl-C in
that window would print an import traceback. The console script therefore starts here, outside
the ``pi_trio`` package (whose ``__init__`` is the heavy import): a SIGINT handler that writes
the command line's usual ``pi-trio: interrupted`` and exits with status 130 stays in place
until :func:`pi_trio.cli.main` is imported, which handles Ctrl-C itself from then on.
Nothing has started at that point (no task, no file, no connection), so exiting at once leaves
nothing behind.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

INTERRUPTED = 130


def _interrupted_while_loading(signum: int, frame: FrameType | None) -> None:
    try:
        os.write(2, b"pi-trio: interrupted\n")
    finally:
        os._exit(INTERRUPTED)


def main() -> int:
    """Import the command line under a quiet SIGINT handler, then run it."""
    previous = signal.signal(signal.SIGINT, _interrupted_while_loading)
    try:
        from pi_trio.cli import main as run
    finally:
        signal.signal(signal.SIGINT, previous)
    return run(sys.argv[1:])
