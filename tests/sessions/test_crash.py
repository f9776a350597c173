"""The crash test: SIGKILL a process driving a durable agent at seeded random moments, resume
each session in a new process, and check what the log promised.

A child drives an agent (4 turns of 3 parallel tool calls, async and thread tools, replay
"never" and "safe", then a queued follow-up) on a real SQLite file; the parent kills it after
a random delay within one run's duration, then a second child resumes the session and answers
a new prompt. ``PI_TRIO_CRASH_KILLS`` sets the number of kills (default 200; fewer for a quick
local run). Figures are printed (``pytest -s``) for the closing note.
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

import pi_trio as pt
from pi_trio.sessions import PROCESS_STOPPED_TEXT
from pi_trio.testing import check_transcript

from . import _crash_child as child

pytestmark = pytest.mark.slow  # real processes killed with SIGKILL at random moments

KILLS = int(os.environ.get("PI_TRIO_CRASH_KILLS", "200"))
SEED = 20261201


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _check(session: str, out: dict[str, Any], seen: list[str], effects: list[str]) -> list[str]:
    """Every property of the done-when list; returns the tallies of what repair did."""
    repaired = out["repaired"]
    messages = [pt.from_json(item, pt.AgentMessage) for item in repaired]  # type: ignore[arg-type]
    tally: list[str] = []
    assert check_transcript(messages) == [], session  # the project's one transcript checker
    # 1. the transcript is valid: each call of a live assistant message has exactly one result
    #    in the block right after it, and no result is an orphan
    expected: list[str] = []
    for message in messages:
        if isinstance(message, pt.ToolResultMessage):
            assert message.tool_call_id in expected, f"{session}: orphan {message.tool_call_id}"
            expected.remove(message.tool_call_id)
            continue
        assert not expected, f"{session}: calls {expected} without a result"
        if isinstance(message, pt.AssistantMessage) and message.stop_reason not in (
            "error",
            "aborted",
        ):
            expected = [call.id for call in message.tool_calls]
        if (
            isinstance(message, pt.AssistantMessage)
            and message.error_message == PROCESS_STOPPED_TEXT
        ):
            tally.append("closed")
    assert not expected, f"{session}: calls {expected} without a result"
    assert not messages or isinstance(messages[-1], pt.AssistantMessage), session
    # 2. every message whose message_end a listener saw is there, once
    for line in seen:
        if line != "FINISHED":
            assert repaired.count(json.loads(line)) == 1, f"{session}: {line[:80]} not once"
    done = {tuple(line.split()[1:]) for line in effects if line.startswith("done ")}
    starts = collections.Counter(
        tuple(line.split()[1:]) for line in effects if line.startswith("start ")
    )
    for message in messages:
        if not isinstance(message, pt.ToolResultMessage):
            continue
        key = (message.tool_call_id, message.tool_name)
        why = (
            (message.details or {}).get("interrupted")
            if isinstance(message.details, dict)
            else None
        )
        if not message.is_error:
            # 3. no real result the tool never produced
            assert key in done, f"{session}: result of {key} that the tool never produced"
            assert message.content == [pt.TextContent(f"{key[1]} did {key[0]}")]
            if message.tool_name in child.SAFE and starts[key] > 1:
                tally.append("replayed")
        else:
            assert why in ("not_started", "outcome_unknown"), f"{session}: {message}"
            tally.append(why)
            # 4. a call whose tool had started is never "not_started"
            if why == "not_started":
                assert starts[key] == 0, f"{session}: {key} started, marked not_started"
    # 5. no replay="never" tool ran twice
    for (call_id, name), count in starts.items():
        if name in child.NEVER:
            assert count == 1, f"{session}: {name} {call_id} ran {count} times"
    # 6. the resumed agent answers a new prompt
    assert out["answers"][:1] == ["fresh answer"], f"{session}: {out['answers']}"
    return tally


def test_sigkill_at_random_moments_loses_nothing_promised(tmp_path: Path) -> None:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([child.__name__])
    db = str(tmp_path / "crash.db")
    rng = random.Random(SEED)

    def run(target: Any, *args: Any) -> multiprocessing.process.BaseProcess:
        process = context.Process(target=target, args=args)
        process.start()
        return process

    # uninterrupted runs (the first one warms the forkserver); the fastest gives the span the
    # kills land in, so that most of them land mid-run even when the machine is busy
    spans = []
    for attempt in ("warm", "calibrate-1", "calibrate-2"):
        started = time.monotonic()
        full = run(child.drive, db, attempt, str(tmp_path / f"e-{attempt}"),
                   str(tmp_path / f"s-{attempt}"), 0)  # fmt: skip
        full.join(60)
        spans.append(time.monotonic() - started)
        assert full.exitcode == 0 and _lines(tmp_path / f"s-{attempt}")[-1] == "FINISHED"
    span = min(spans[1:])

    tallies: collections.Counter[str] = collections.Counter()
    began = time.monotonic()
    for index in range(KILLS):
        session = f"k{index}"
        effects, seen, out = (tmp_path / f"{kind}-{session}" for kind in ("e", "s", "o"))
        seed = rng.randrange(1 << 30)
        driver = run(child.drive, db, session, str(effects), str(seen), seed)
        time.sleep(rng.uniform(0, span))
        driver.kill()  # SIGKILL (a no-op when it has finished)
        driver.join(30)
        finished = _lines(seen)[-1:] == ["FINISHED"]
        tallies["finished before the kill" if finished else "killed mid-run"] += 1
        resumer = run(child.resume, db, session, str(effects), str(out), seed)
        resumer.join(60)
        assert resumer.exitcode == 0, f"{session}: resume failed ({resumer.exitcode})"
        tallies.update(_check(session, json.loads(out.read_text()), _lines(seen), _lines(effects)))
    elapsed = time.monotonic() - began
    print(f"\ncrash test: {KILLS} kills in {elapsed:.1f} s (one run spans {span * 1000:.0f} ms)")
    for name, count in sorted(tallies.items()):
        print(f"  {name}: {count}")
    assert tallies["killed mid-run"] > KILLS // 3  # the kills really land inside runs
