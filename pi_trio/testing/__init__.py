"""pi_trio.testing: the invariants pi_trio is tested against, and a cancellation stress test."""

from __future__ import annotations

from ._grammar import assert_events_valid, check_events
from ._transcript import assert_transcript_valid, check_transcript

__all__ = [
    "assert_events_valid",
    "assert_transcript_valid",
    "check_events",
    "check_transcript",
]
