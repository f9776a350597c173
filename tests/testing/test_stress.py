"""stress() on healthy and broken agents (MockClock: the abort moments are exact and repeatable)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
import pi_trio.testing as ptt

from . import agents

RUNS = 50


async def test_a_healthy_agent_survives_every_abort(autojump_clock: trio.testing.MockClock) -> None:
    report = await ptt.stress(agents.healthy_agent, "Go.", runs=RUNS, seed=1)
    assert report.ok, report.summary()
    assert report.runs == RUNS and report.calibration_runs == 5
    assert report.mid_run + report.finished_first == RUNS
    assert report.mid_run > RUNS // 2 and len(report.latencies) == report.mid_run
    assert report.window > 0 and report.events > 0 and report.leaked_tasks == 0
    data = json.loads(json.dumps(report.to_json()))
    assert data["runs"] == RUNS and data["violations"] == []
    assert data["abort_to_idle_s"]["count"] == report.mid_run


@pytest.mark.parametrize("abort", ["deadline", "both"])
async def test_deadlines_abort_the_same_way(
    autojump_clock: trio.testing.MockClock, abort: Any
) -> None:
    report = await ptt.stress(agents.healthy_agent, runs=RUNS, seed=2, abort=abort)
    assert report.ok, report.summary()
    assert report.mid_run > RUNS // 2


async def test_the_same_seed_draws_the_same_moments(autojump_clock: trio.testing.MockClock) -> None:
    options: Any = {"runs": 20, "window": 6.0, "abort": "both"}
    first = await ptt.stress(agents.stubborn_agent, seed=5, **options)
    again = await ptt.stress(agents.stubborn_agent, seed=5, **options)
    other = await ptt.stress(agents.stubborn_agent, seed=6, **options)
    assert {v.mode for v in first.violations} == {"abort", "deadline"}
    assert first.violations == again.violations
    assert first.violations != other.violations
    assert len({v.moment for v in first.violations}) == len(first.violations)  # one per run


async def test_a_tool_that_swallows_cancelled_is_reported_with_a_reproducing_seed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    report = await ptt.stress(agents.stubborn_agent, runs=RUNS, seed=3)
    assert not report.ok
    violation = report.violations[0]
    assert violation.kinds == ("slow",) and violation.seed == 3 and violation.mode == "abort"
    assert "2,000.0 ms after the abort" in violation.problems[0]
    # the seed and the report's window give the same moment; reproduce() runs it again
    again = await ptt.stress(
        agents.stubborn_agent, seed=3, window=report.window, only_run=violation.run
    )
    assert again.violations == (violation,)
    rerun = await ptt.reproduce(agents.stubborn_agent, "Go.", violation)
    assert rerun.violations == (violation,)
    # the same moment on a healthy agent: nothing to report
    healthy = await ptt.reproduce(agents.healthy_agent, "Go.", violation)
    assert healthy.ok and healthy.mid_run == 1


async def test_a_listener_that_raises_is_reported(autojump_clock: trio.testing.MockClock) -> None:
    report = await ptt.stress(agents.careless_listener_agent, runs=RUNS, seed=4)
    assert not report.ok and report.finished_first + report.mid_run == RUNS
    violation = report.violations[0]
    # every subscriber still sees a well-formed run (the agent isolates the failing listener);
    # the failure itself is what is reported, from pi_trio's log record
    assert violation.kinds == ("failure",)
    assert any("IndexError" in p and "message_end" in p for p in violation.problems)
    rerun = await ptt.reproduce(agents.careless_listener_agent, "Go.", violation)
    assert rerun.violations == (violation,)


async def test_a_listener_that_raises_mid_run_ends_it_in_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def make() -> pt.Agent:
        agent = agents.healthy_agent()

        def on_event(event: pt.AgentEvent) -> None:
            if isinstance(event, pt.ToolExecutionEnd) and event.tool_call_id == "call_1_0":
                raise RuntimeError("listener bug")

        agent.subscribe(on_event)
        return agent

    report = await ptt.stress(make, runs=10, seed=1, calibration_runs=1)
    assert report.violations[0].run == -1  # the unaborted calibration run hits it first
    assert "error" in report.violations[0].kinds
    assert any("listener bug" in p for p in report.violations[0].problems)
    allowed = await ptt.stress(make, runs=10, seed=1, calibration_runs=1, allow_errors=True)
    assert all("error" not in v.kinds for v in allowed.violations)


async def test_a_tool_that_leaks_a_task_is_reported(autojump_clock: trio.testing.MockClock) -> None:
    report = await ptt.stress(agents.leaky_agent, runs=10, seed=1)
    assert report.leaked_tasks > 0
    leak = next(v for v in report.violations if v.run >= 0)
    assert leak.kinds == ("leak",)
    assert "still alive after wait_for_idle(): tests.testing.agents._linger" in leak.problems[0]
    assert "violation: run -1 (calibration, not aborted; leak)" in report.summary()
    assert f"violation: run {leak.run} (abort at " in report.summary()
    calibration = await ptt.reproduce(agents.leaky_agent, "Go.", report.violations[0])
    assert calibration.violations == (report.violations[0],) and calibration.mid_run == 0


async def test_a_task_leaked_into_an_outside_nursery_is_blamed_on_its_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with trio.open_nursery() as outside:

        async def into_outside(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
            outside.start_soon(trio.sleep, 3, name="orphan")
            return await agents.nap(tool_call_id, params, on_update)

        report = await ptt.stress(
            lambda: agents.agent_with(into_outside), runs=6, seed=1, concurrency=3
        )
    assert report.leaked_tasks > 0
    assert all(v.kinds == ("leak",) and "orphan" in v.problems[0] for v in report.violations)
    # runs that overlap do not blame each other's tasks: a healthy crowd leaks nothing
    crowd = await ptt.stress(agents.healthy_agent, runs=12, seed=1, concurrency=4)
    assert crowd.ok, crowd.summary()


class SwallowingAgent(pt.Agent):
    """An agent whose prompt() eats the caller's Cancelled (a deadline no longer propagates)."""

    async def prompt(self, *args: Any, **kwargs: Any) -> None:
        with contextlib.suppress(trio.Cancelled):
            await super().prompt(*args, **kwargs)


async def test_a_swallowed_deadline_is_reported(autojump_clock: trio.testing.MockClock) -> None:
    def make() -> pt.Agent:
        healthy = agents.healthy_agent()
        return SwallowingAgent(healthy.state, stream_fn=healthy.stream_fn)

    report = await ptt.stress(make, runs=RUNS, seed=1, abort="deadline")
    violation = report.violations[0]
    assert violation.kinds == ("raised",) and violation.mode == "deadline"
    assert "something swallowed trio.Cancelled" in violation.problems[0]
    assert (await ptt.reproduce(make, "Go.", violation)).violations == (violation,)
    # abort() is not the caller's cancellation: prompt() returning normally is right there
    assert (await ptt.stress(make, runs=RUNS, seed=1, abort="random")).ok


class HidingAgent(pt.Agent):
    """An agent that relabels its aborted ending as a normal stop (a transcript that lies)."""

    async def prompt(self, *args: Any, **kwargs: Any) -> None:
        await super().prompt(*args, **kwargs)
        last = self.state.messages[-1]
        if isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted":
            last.stop_reason = "stop"


async def test_an_aborted_run_that_does_not_end_aborted_is_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def make() -> pt.Agent:
        healthy = agents.healthy_agent()
        return HidingAgent(healthy.state, stream_fn=healthy.stream_fn)

    report = await ptt.stress(make, runs=10, seed=1)
    assert len(report.violations) == report.mid_run == 10
    assert all(v.kinds == ("transcript",) for v in report.violations)
    for violation in report.violations:
        assert "last stop reason is 'stop', not 'aborted'" in violation.problems[-1]


async def test_aborts_after_the_end_check_the_run_as_finished(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the healthy run takes 6.6 s: moments up to 20 s land after its end about 2 times in 3
    report = await ptt.stress(agents.healthy_agent, runs=RUNS, seed=1, window=20.0)
    assert report.ok, report.summary()
    assert report.finished_first > RUNS // 3 and report.mid_run > RUNS // 6
    assert report.calibration_runs == 0


async def test_your_own_check_runs_on_every_idle_agent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[pt.Agent] = []

    async def too_long(agent: pt.Agent) -> list[str]:
        seen.append(agent)
        assert not agent.state.is_streaming
        return ["more than 5 messages"] if len(agent.state.messages) > 5 else []

    report = await ptt.stress(agents.healthy_agent, runs=10, seed=1, check=too_long)
    assert len(seen) == 15 and len(set(map(id, seen))) == 15  # 5 calibration runs, fresh agents
    assert report.violations and all(v.kinds == ("check",) for v in report.violations)
    assert all(v.problems == ("more than 5 messages",) for v in report.violations)


class RaisingAgent(pt.Agent):
    """An agent whose prompt() lets an exception group out after an aborted run."""

    async def prompt(self, *args: Any, **kwargs: Any) -> None:
        await super().prompt(*args, **kwargs)
        if self.state.messages[-1].stop_reason == "aborted":  # type: ignore[union-attr]
            raise ExceptionGroup("tools", [ValueError("one"), KeyError("two")])


async def test_an_exception_out_of_prompt_is_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def make() -> pt.Agent:
        healthy = agents.healthy_agent()
        return RaisingAgent(healthy.state, stream_fn=healthy.stream_fn)

    report = await ptt.stress(make, runs=5, seed=1)
    assert len(report.violations) == 5 and report.violations[0].kinds == ("raised",)
    assert report.violations[0].problems == (
        "prompt() raised an exception group (none may reach the caller): "
        "ExceptionGroup[ValueError: one, KeyError: 'two']",
    )


async def test_the_one_liner_raises_with_the_summary(
    autojump_clock: trio.testing.MockClock,
) -> None:
    await ptt.assert_survives_aborts(agents.healthy_agent, "hi", runs=10, seed=1)
    with pytest.raises(AssertionError) as caught:
        await ptt.assert_survives_aborts(agents.stubborn_agent, "hi", runs=10, seed=1)
    assert "runs broke an invariant" in str(caught.value)
    assert "violation: run" in str(caught.value)


async def test_progress_factories_and_bad_settings(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[ptt.StressProgress] = []

    async def make_async() -> pt.Agent:
        await trio.lowlevel.checkpoint()
        return agents.healthy_agent()

    report = await ptt.stress(make_async, runs=4, seed=1, progress=seen.append)
    assert report.ok
    assert [p.done for p in seen] == [1, 2, 3, 4] and all(p.total == 4 for p in seen)
    assert seen[-1].eta == 0
    with pytest.raises(TypeError, match=r"must return a pt\.Agent"):
        await ptt.stress(lambda: "not an agent", runs=1)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="abort must be"):
        await ptt.stress(agents.healthy_agent, abort="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concurrency"):
        await ptt.stress(agents.healthy_agent, concurrency=0)


async def test_a_run_that_never_goes_idle_is_reported_hung(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def stuck(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        with trio.CancelScope(shield=True):
            await trio.sleep(100)
        return pt.ToolResult([pt.TextContent("late")])

    mode, moment = ptt.plan_run(1, 0, "random", 20.0)
    assert mode == "abort" and 1 < moment < 20  # the abort lands while the tool runs
    report = await ptt.stress(
        lambda: agents.agent_with(stuck), runs=1, seed=1, window=20.0, run_timeout=30
    )
    assert report.violations[0].kinds == ("hung",)
    assert "not idle 30 s after its prompt" in report.violations[0].problems[0]


def _sync_nap(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent("napped")])  # a plain def: it runs in a thread


async def test_a_plain_def_tool_under_the_autojump_clock_is_refused_not_hung(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with pytest.raises(ValueError, match=r"plain-def tool\(s\) work: .* Make the tool async"):
        await ptt.stress(lambda: agents.agent_with(_sync_nap), "Go.", runs=5, seed=1)


@pytest.mark.slow  # the real clock: seconds of streaming
async def test_a_plain_def_tool_on_the_real_clock_is_stressed() -> None:
    make = lambda: agents.agent_with(_sync_nap)  # noqa: E731
    report = await ptt.stress(make, "Go.", runs=3, calibration_runs=1, seed=1)
    assert report.ok, report.summary()
