"""The compaction events in pi-coding-agent 1.6's JSON (its ``compaction_start`` and
``compaction_end``, as its RPC mode writes them), and back."""

from __future__ import annotations

from typing import Any

import pytest

import pi_trio as pt


def test_compaction_start_is_pis() -> None:
    assert pt.to_json(pt.CompactionStart("threshold")) == {
        "type": "compaction_start",
        "reason": "threshold",
    }


def test_a_compaction_end_with_a_summary_carries_pis_result() -> None:
    event = pt.CompactionEnd("the summary", 123_456, reason="overflow", will_retry=True)
    data = pt.to_json(event)
    assert data == {
        "type": "compaction_end",
        "reason": "overflow",
        "result": {"summary": "the summary", "tokensBefore": 123_456},
        "aborted": False,
        "willRetry": True,
    }
    assert pt.from_json(data, pt.AgentEvent) == event


def test_a_failed_or_aborted_compaction_end_has_no_result() -> None:
    failed = pt.CompactionEnd(None, 10, "Summary request failed: HTTP 500", reason="manual")
    assert pt.to_json(failed) == {
        "type": "compaction_end",
        "reason": "manual",
        "aborted": False,
        "willRetry": False,
        "errorMessage": "Summary request failed: HTTP 500",
    }
    aborted = pt.to_json(pt.CompactionEnd(None, 10, aborted=True))
    assert "result" not in aborted and aborted["aborted"] is True


def test_what_pi_writes_is_read_and_written_back_unchanged() -> None:
    data: dict[str, Any] = {
        "type": "compaction_end",
        "reason": "threshold",
        "result": {
            "summary": "## Goal\n...",
            "firstKeptEntryId": "a1b2c3d4",
            "tokensBefore": 180_000,
            "estimatedTokensAfter": 21_000,
        },
        "aborted": False,
        "willRetry": False,
    }
    event = pt.from_json(data, pt.AgentEvent)
    assert isinstance(event, pt.CompactionEnd)
    assert (event.summary, event.tokens_before, event.reason) == (
        "## Goal\n...",
        180_000,
        "threshold",
    )
    assert pt.to_json(event) == data


def test_a_result_without_a_summary_is_written_back_as_it_came() -> None:
    data = {
        "type": "compaction_end",
        "reason": "manual",
        "result": {"firstKeptEntryId": "ab12cd34"},
        "aborted": False,
        "willRetry": False,
    }
    assert pt.to_json(pt.from_json(data, pt.CompactionEnd)) == data  # before: result dropped


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"aborted": "false"}, "aborted must be true or false"),  # before: read as True
        ({"willRetry": [0]}, "willRetry must be true or false"),
        (
            {"result": {"summary": "s", "tokensBefore": 5.0}},
            "tokensBefore must be a whole number, got 5.0",
        ),
    ],
)
def test_fields_of_the_wrong_type_are_refused_by_name(changes: dict[str, Any], said: str) -> None:
    data = {"type": "compaction_end", "reason": "manual", **changes}
    with pytest.raises(pt.WireFormatError, match=said):
        pt.from_json(data, pt.CompactionEnd)
