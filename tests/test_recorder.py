"""pt.Recorder: the seam a durable store uses. Order: state, then record/flush, then delivery."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from .support import make_agent


class _Log:
    """A recorder that keeps what it was told and when it was flushed."""

    def __init__(self, fail_flush: bool = False) -> None:
        self.noted: list[Any] = []
        self.durable: list[Any] = []
        self.flushes = 0
        self.agent: pt.Agent | None = None  # set once the agent it records is made
        self.fail_flush = fail_flush
        self.state_at_record: list[int] = []

    def record(self, event: pt.AgentEvent) -> bool:
        assert self.agent is not None
        self.noted.append(event)
        self.state_at_record.append(len(self.agent.state.messages))
        return isinstance(event, pt.MessageEnd | pt.ToolExecutionEnd)

    async def flush(self) -> None:
        await trio.lowlevel.checkpoint()
        if self.fail_flush:
            raise OSError("disk full")
        self.flushes += 1
        self.durable = list(self.noted)

    def queued(self, kind: str, message: pt.AgentMessage) -> None:
        self.noted.append(("queued", kind, message))

    def cleared(self, kind: str) -> None:
        self.noted.append(("cleared", kind))


async def test_an_ended_message_is_durable_before_any_listener_sees_it() -> None:
    log = _Log()
    agent = log.agent = make_agent([faux.assistant_message("hello")], (), recorder=log)
    seen: list[bool] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageEnd):
            seen.append(event in log.durable)

    agent.subscribe(listener)
    await agent.prompt("hi")
    assert seen == [True, True]  # the prompt's message_end and the answer's
    assert type(log.noted[0]) is pt.AgentStart


async def test_record_sees_state_already_updated() -> None:
    log = _Log()
    agent = log.agent = make_agent([faux.assistant_message("hello")], (), recorder=log)
    await agent.prompt("hi")
    ends = [i for i, e in enumerate(log.noted) if isinstance(e, pt.MessageEnd)]
    assert [log.state_at_record[i] for i in ends] == [1, 2]


async def test_queued_messages_are_flushed_before_a_run_drains_them() -> None:
    log = _Log()
    agent = log.agent = make_agent(
        [faux.assistant_message("one"), faux.assistant_message("two")], (), recorder=log
    )
    flushes_at_drain: list[int] = []

    def listener(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.TurnEnd) and not flushes_at_drain:
            agent.follow_up("more")
            flushes_at_drain.append(log.flushes)

    agent.subscribe(listener)
    await agent.prompt("hi")
    queued = [n for n in log.noted if isinstance(n, tuple) and n[0] == "queued"]
    assert len(queued) == 1 and queued[0][1] == "follow_up"
    # the follow-up was durable before the run took it
    assert queued[0] in log.durable
    agent.steer("later")
    agent.clear_all_queues()
    assert ("cleared", "steer") in log.noted and ("cleared", "follow_up") in log.noted


async def test_a_failing_flush_ends_the_run_with_its_error() -> None:
    log = _Log(fail_flush=True)
    agent = log.agent = make_agent([faux.assistant_message("hello")], (), recorder=log)
    delivered: list[pt.AgentEvent] = []
    agent.subscribe(delivered.append)
    await agent.prompt("hi")
    assert agent.state.error_message == "OSError: disk full"
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "error"


async def test_a_flush_that_keeps_failing_is_one_traceback_then_one_line_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a store that is down fails every flush of the run (the closing events' and the end's):
    # the first failure comes with its traceback, the others with the error's first line
    caplog.set_level(logging.DEBUG, logger="pi_trio")
    log = _Log(fail_flush=True)
    agent = log.agent = make_agent([faux.assistant_message("hello")], (), recorder=log)
    await agent.prompt("hi")
    traced = [r for r in caplog.records if r.exc_info]
    assert len(traced) == 1  # the failure the run ends with is not logged again by the loop
    records = [r for r in caplog.records if "recorder flush failed" in r.getMessage()]
    assert len(records) >= 2
    first, rest = records[0], records[1:]
    assert first.getMessage() == "recorder flush failed before message_end; ending the run"
    assert (first.levelno, first.exc_info and first.exc_info[0]) == (logging.ERROR, OSError)
    assert [(r.levelno, r.exc_info) for r in rest] == [(logging.ERROR, None)] * len(rest)
    assert all(r.getMessage().endswith(": OSError: disk full") for r in rest)
    assert rest[-1].getMessage().startswith("recorder flush failed at the end of the run")


@pytest.mark.parametrize("kind", ["steer", "follow_up"])
def test_queue_methods_report_to_the_recorder(kind: str) -> None:
    log = _Log()
    agent = log.agent = make_agent([], (), recorder=log)
    getattr(agent, kind)("x")
    assert log.noted[0][:2] == ("queued", kind)
