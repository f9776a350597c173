"""The transcript invariants every run must leave behind: ``pi_trio.testing``'s checker."""

from __future__ import annotations

from pi_trio.testing import assert_transcript_valid, check_transcript

__all__ = ["assert_transcript_valid", "check_transcript"]
