"""The shape every run's event stream must have: ``pi_trio.testing``'s checker, for the tests."""

from __future__ import annotations

from pi_trio.testing import assert_events_valid, check_events

assert_event_grammar = assert_events_valid

__all__ = ["assert_event_grammar", "assert_events_valid", "check_events"]
