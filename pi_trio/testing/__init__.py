"""pi_trio.testing: the invariants pi_trio is tested against, and a cancellation stress test.

Installed with the package, for your own test suite::

    import pi_trio.testing

    async def test_my_agent_survives_aborts() -> None:  # a pytest-trio test
        await pi_trio.testing.assert_survives_aborts(make_agent, "hi", runs=200)

- :func:`check_transcript` / :func:`assert_transcript_valid`: every tool call answered once
  before the next assistant message, no orphan results, an aborted run ends "aborted"; with
  ``round_trip=True``, every message unchanged by a round trip through pi's JSON.
- :func:`check_events` / :func:`assert_events_valid`: the event grammar, per subscriber.
- :func:`stress`: aborts fresh agents at seeded random moments and checks all of it, plus
  leaked tasks and abort->idle latency; :func:`reproduce` runs one violation again.
- :func:`demo_agent`: the scripted agent ``pi-trio stress --demo`` uses.
"""

from __future__ import annotations

from ._demo import demo_agent
from ._grammar import assert_events_valid, check_events
from ._report import StressProgress, StressReport, Violation
from ._stress import AgentFactory, assert_survives_aborts, plan_run, reproduce, stress
from ._transcript import assert_transcript_valid, check_transcript

__all__ = [
    "AgentFactory",
    "StressProgress",
    "StressReport",
    "Violation",
    "assert_events_valid",
    "assert_survives_aborts",
    "assert_transcript_valid",
    "check_events",
    "check_transcript",
    "demo_agent",
    "plan_run",
    "reproduce",
    "stress",
]

for _name in ("StressProgress", "StressReport", "Violation"):
    globals()[_name].__module__ = __name__
