"""The worker threads of sync tools: a limiter of their own, apart from Trio's default one."""

from __future__ import annotations

import trio

__all__ = ["DEFAULT_TOOL_THREADS", "tool_thread_limiter"]

DEFAULT_TOOL_THREADS = 40
"""Sync tools running at once in a Trio run, until ``total_tokens`` is set (Trio's default)."""

_LIMITER: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("pi_trio_tool_threads")


def tool_thread_limiter() -> trio.CapacityLimiter:
    """The limiter of this Trio run's sync-tool threads (made at first use, with
    :data:`DEFAULT_TOOL_THREADS` tokens).

    A sync tool (a plain ``def`` ``execute``) runs in a worker thread holding one of its
    tokens, never one of ``trio.to_thread``'s default limiter: a thread abandoned by a timeout
    or an abort keeps its token until its function returns (Python cannot stop a thread), so a
    few hung tools would otherwise leave no thread to the rest of the process (Trio's DNS
    lookups among them, and with them every new HTTP connection). Set ``total_tokens`` to run
    more sync tools at once; a call waiting for a token waits within its ``timeout``.

    Raises:
        RuntimeError: called outside a Trio run.
    """
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = trio.CapacityLimiter(DEFAULT_TOOL_THREADS)
        _LIMITER.set(limiter)
        return limiter
