"""What every Python implementation shares: the S7 schedule, the transcript check, figures.

Transcripts are checked in a normalised form, so the same check covers pi_trio's messages,
the floor's minimal records and the JSON that the Node harness prints::

    {"role": "user"}
    {"role": "assistant", "stopReason": "toolUse", "toolCalls": ["id1", "id2"]}
    {"role": "toolResult", "toolCallId": "id1"}
"""

from __future__ import annotations

import contextlib
import gc
import math
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

_MASK = 0xFFFFFFFF

S7_TURNS = 5
S7_PARALLEL = 3
S7_SEED = 12345


def mulberry32(seed: int) -> Callable[[], float]:
    """The mulberry32 PRNG, bit for bit as the usual JavaScript one-liner (floats in [0, 1))."""
    state = seed & _MASK

    def rand() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & _MASK
        t = ((state ^ (state >> 15)) * (state | 1)) & _MASK
        t = ((t + (((t ^ (t >> 7)) * (t | 61)) & _MASK)) & _MASK) ^ t
        return ((t ^ (t >> 14)) & _MASK) / 4294967296

    return rand


def s7_schedule(runs: int, seed: int = S7_SEED) -> list[tuple[list[list[float]], float]]:
    """Per run: the tool sleeps in ms (``sleeps[turn][call]``) and the abort time in ms."""
    rand = mulberry32(seed)
    schedule = []
    for _ in range(runs):
        sleeps = [[2 * rand() for _ in range(S7_PARALLEL)] for _ in range(S7_TURNS)]
        longest = sum(max(turn) for turn in sleeps)
        schedule.append((sleeps, rand() * longest))
    return schedule


def transcript_violations(
    messages: Sequence[Mapping[str, Any]], *, allowed_last: Iterable[str] = ("aborted",)
) -> list[str]:
    """What is wrong with a transcript (empty when valid).

    Every tool call of an assistant message has exactly one tool result after it and before
    the next assistant message; no tool result answers a call that is not pending; the last
    message is an assistant message whose stopReason is in ``allowed_last``. The tool calls of
    a message that stopped with "aborted" or "error" (cut off mid-stream) are never executed
    and need no result (DESIGN.md, pi's rule); a result for one is an orphan.
    """
    problems: list[str] = []
    pending: dict[str, int] = {}
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            if pending:
                problems.append(f"message {index}: tool calls without a result: {sorted(pending)}")
                pending.clear()
            answered.clear()
            if message.get("stopReason") not in ("aborted", "error"):
                for call_id in message.get("toolCalls", ()):
                    pending[call_id] = index
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            if call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"message {index}: a second result for {call_id}")
            else:
                problems.append(f"message {index}: orphan tool result for {call_id}")
    if pending:
        problems.append(f"end: tool calls without a result: {sorted(pending)}")
    allowed = set(allowed_last)
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant":
        problems.append(f"the last message is not the assistant's: {last.get('role')}")
    elif last.get("stopReason") not in allowed:
        problems.append(f"the last stopReason is {last.get('stopReason')!r}, not {sorted(allowed)}")
    return problems


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class CollectorTime:
    """CPU seconds spent in Python's cyclic garbage collector (every thread's collections)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0


@contextlib.contextmanager
def collector_time() -> Iterator[CollectorTime]:
    """Time the cyclic collections inside the block (``gc.callbacks``; a collection runs in the
    thread whose allocation triggered it, and its start and stop are read in that thread)."""
    spent = CollectorTime()
    started: dict[int, float] = {}

    def on_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[threading.get_ident()] = time.thread_time()
            return
        start = started.pop(threading.get_ident(), None)
        if start is not None:  # not a collection already running when the block began
            spent.seconds += time.thread_time() - start
            spent.collections += 1

    gc.callbacks.append(on_collection)
    try:
        yield spent
    finally:
        gc.callbacks.remove(on_collection)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
