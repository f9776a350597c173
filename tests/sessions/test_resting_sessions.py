"""How long a worker leaves a session the store failed before claiming it again: the poll
interval after the first failure, twice as long after each further one in a row up to 30 s;
run through, it is forgotten; not seen again for a minute, it is forgotten too. (The worker's
side, on PostgreSQL: ``test_postgres_refusals``.)"""

from __future__ import annotations

import pytest

from pi_trio.sessions._serve import _Resting


def test_each_failure_in_a_row_doubles_the_wait_up_to_30_s() -> None:
    resting = _Resting(poll_interval=2.0)
    waits = [resting.failed("s1", now=100.0) for _ in range(6)]
    assert waits == [(1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (5, 30.0), (6, 30.0)]


def test_a_session_is_left_out_of_claims_until_it_is_due() -> None:
    resting = _Resting(poll_interval=1.0)
    resting.failed("s1", now=10.0)
    resting.failed("s2", now=10.5)
    assert resting.skipped(now=10.9) == ["s1", "s2"]
    assert resting.wait_at_most(5.0, now=10.9) == pytest.approx(0.1)  # s1 falls due first
    assert resting.skipped(now=11.0) == ["s2"]  # due: claimed at the next look
    assert resting.wait_at_most(5.0, now=12.0) == 5.0  # none resting: the poll interval


def test_a_session_run_through_starts_again_from_the_poll_interval() -> None:
    resting = _Resting(poll_interval=1.0)
    resting.failed("s1", now=0.0)
    resting.failed("s1", now=2.0)
    resting.recovered("s1")
    assert resting.skipped(now=2.5) == []
    assert resting.failed("s1", now=3.0) == (1, 1.0)


def test_a_session_not_seen_again_is_forgotten() -> None:
    """Deleted, or run by another worker: its account does not stay for the worker's life."""
    resting = _Resting(poll_interval=1.0)
    resting.failed("gone", now=0.0)
    resting.failed("gone", now=1.0)  # due at 3
    assert resting.skipped(now=62.9) == [] and "gone" in resting.sessions
    resting.skipped(now=63.1)
    assert resting.sessions == {}
    assert resting.failed("gone", now=64.0) == (1, 1.0)


def test_the_rest_is_at_most_30_s_whatever_the_poll_interval() -> None:
    """New input for a resting session waits no longer than that."""
    assert _Resting(poll_interval=300.0).failed("s1", now=0.0) == (1, 30.0)
    assert _Resting(poll_interval=float("inf")).failed("s1", now=0.0) == (1, 30.0)


def test_whether_a_session_rests() -> None:
    resting = _Resting(poll_interval=1.0)
    resting.failed("s1", now=0.0)
    assert resting.resting("s1", now=0.5) and not resting.resting("s1", now=1.0)
    assert not resting.resting("s2", now=0.5)
