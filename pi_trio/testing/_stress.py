"""``stress``: abort your own agent at seeded random moments and check every invariant.

Each run gets a fresh agent from ``make_agent()``, a listener and an ``agent.events()``
channel that record its events, and one abort from a timer task at a moment drawn from
``random.Random(f"{seed}:{run}")`` within a window measured on a few unaborted calibration
runs (their median duration, like BENCHMARKS.md S7's expected length): ``agent.abort()``
(mode "random"), or the cancellation of the caller's own cancel scope around ``prompt()``
(mode "deadline": to the agent exactly what an expiring ``trio.move_on_after`` is, and it lets
the test note the transcript at that very moment, which a deadline expiring inside Trio's run
loop would not; ``trio.current_effective_deadline()`` is not set by it).
After ``wait_for_idle()`` it checks the transcript (:func:`check_transcript`), both event
records (:func:`check_events`), that the run ended without an error, that no task the run
spawned is still alive (a ``trio.abc.Instrument`` sees every spawn), that ``prompt()`` raised
nothing (and, under a deadline, did not swallow the ``Cancelled``), and how long the abort took
to reach idle (``trio.current_time()``: the real clock in a plain ``trio.run``, the virtual one
under ``MockClock``).

Connection pools are not inspected (httpx has no public view of its pool): pass ``check=`` to
add your own per-run check.
"""

from __future__ import annotations

import inspect
import logging
import math
import random
import statistics
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TypeAlias

import attrs
import trio
import trio.testing

from ..agent import Agent
from ..events import AgentEvent, BudgetReached, QueueUpdate
from ..messages import AgentMessage, AssistantMessage
from ._grammar import check_events
from ._report import AbortMode, RunMode, StressProgress, StressReport, Violation
from ._tasks import FailureLog, RunTasks, task_names
from ._transcript import check_transcript

__all__ = ["AgentFactory", "assert_survives_aborts", "reproduce", "stress"]

AgentFactory: TypeAlias = Callable[[], "Agent | Awaitable[Agent]"]
Prompt: TypeAlias = "str | AgentMessage | Sequence[AgentMessage]"
Check: TypeAlias = Callable[[Agent], "Iterable[str] | Awaitable[Iterable[str]]"]
_MODES: dict[str, tuple[RunMode, ...]] = {
    "random": ("abort",),
    "deadline": ("deadline",),
    "both": ("abort", "deadline"),
}


@attrs.define
class _Limits:
    max_abort_latency: float | None
    run_timeout: float
    allow_errors: bool
    check: Check | None
    failures: FailureLog | None = None


@attrs.define
class _Outcome:
    duration: float = 0.0
    landed: bool = False
    latency: float | None = None
    leaked: int = 0
    events: int = 0
    problems: dict[str, list[str]] = attrs.Factory(dict)

    def add(self, kind: str, problems: Iterable[str]) -> None:
        items = list(problems)
        if items:
            self.problems.setdefault(kind, []).extend(items)


def plan_run(seed: int, run: int, abort: AbortMode, window: float) -> tuple[RunMode, float]:
    """The mode and the moment (seconds after the prompt) of run ``run``: a pure function."""
    modes = _MODES[abort]
    rng = random.Random(f"{seed}:{run}")
    moment = rng.random() * window
    mode = modes[0] if len(modes) == 1 else rng.choice(modes)
    return mode, moment


async def _build(make_agent: AgentFactory) -> Agent:
    made = make_agent()
    agent = await made if inspect.isawaitable(made) else made
    if not isinstance(agent, Agent):
        raise TypeError(
            f"make_agent() must return a pt.Agent (a fresh one per run), not {type(agent).__name__}"
        )
    _check_clock(agent)
    return agent


def _check_clock(agent: Agent) -> None:
    """Refuse a plain-def tool under an autojump clock: its worker thread's time moves no
    virtual clock, which jumps past the run's timeout while the thread works (every run would
    be reported hung).

    Raises:
        ValueError: saying which tool, and the two ways out.
    """
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock) or clock.autojump_threshold == math.inf:
        return
    threaded = [tool.name for tool in agent.state.tools if not tool.is_async]
    if threaded:
        raise ValueError(
            f"stress() under an autojump MockClock cannot time the plain-def tool(s) "
            f"{', '.join(threaded)}: a worker thread's time moves no virtual clock, so every "
            "run would look hung. Make the tool async (a Trio sleep is virtual), or run the "
            "stress test on the real clock"
        )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = ", ".join(_describe(e) for e in exc.exceptions)
        return f"an exception group (none may reach the caller): {type(exc).__name__}[{inner}]"
    return f"{type(exc).__name__}: {exc}"


async def _one_run(
    agent: Agent,
    prompt: Prompt,
    run: int,
    mode: RunMode,
    moment: float,
    tracker: RunTasks,
    limits: _Limits,
) -> _Outcome:
    """Prompt ``agent``, stop it per ``mode`` at ``moment``, wait for idle, check it all."""
    outcome = _Outcome()
    recorded: list[AgentEvent] = []
    unsubscribe = agent.subscribe(recorded.append)
    first = len(agent.state.messages)
    snapshot: list[int] = []  # len(messages) when the abort landed
    t_abort: list[float] = []
    harness: set[trio.lowlevel.Task] = set()
    root = trio.lowlevel.current_task()
    raised: BaseException | None = None
    idle = False
    tracker.begin(run, root)
    try:
        async with agent.events(max_buffer_size=math.inf) as channel:
            with trio.move_on_after(limits.run_timeout):
                async with trio.open_nursery() as nursery:
                    caller = trio.CancelScope()  # the caller's own scope around prompt()

                    async def aborter(task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
                        task_status.started(trio.lowlevel.current_task())
                        await trio.sleep(moment)
                        if agent.state.is_streaming:  # else the run is over: nothing to stop
                            snapshot.append(len(agent.state.messages))
                            t_abort.append(trio.current_time())
                            if mode == "abort":
                                agent.abort()
                            else:
                                caller.cancel(reason="pi_trio.testing.stress: the deadline")

                    if mode != "none":
                        harness.add(await nursery.start(aborter))
                    t0 = trio.current_time()
                    with caller:
                        try:
                            await agent.prompt(prompt)
                        except Exception as exc:
                            raised = exc
                    await agent.wait_for_idle()
                    t_idle = trio.current_time()
                    idle = True
                    outcome.duration = t_idle - t0
                    leaked = tracker.alive(run) - harness
                    nursery.cancel_scope.cancel()
            received: list[AgentEvent] = []
            while True:
                try:
                    event = channel.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                if not isinstance(
                    event, QueueUpdate | BudgetReached
                ):  # queue notices are not run events
                    received.append(event)
    finally:
        tracker.end(run, root)
        unsubscribe()
    if not idle:
        outcome.add("hung", [f"the run was not idle {limits.run_timeout:g} s after its prompt"])
        return outcome

    messages = list(agent.state.messages)
    outcome.landed = bool(t_abort)
    new = messages[first:]
    ended_aborted = bool(new) and getattr(new[-1], "stop_reason", None) == "aborted"
    if mode == "deadline" and outcome.landed and not caller.cancelled_caught and ended_aborted:
        outcome.add(
            "raised",
            ["the caller's deadline cancelled the run but prompt() returned normally: "
             "something swallowed trio.Cancelled"],
        )  # fmt: skip
    # aborted: the abort landed before the transcript was complete (it grew afterwards)
    aborted = outcome.landed and len(messages) > snapshot[0]
    outcome.add("transcript", check_transcript(messages, aborted=aborted))
    listener_problems = check_events(recorded)
    channel_problems = check_events(received)
    if listener_problems == channel_problems:
        outcome.add("events", [f"listener and events(): {p}" for p in listener_problems])
    else:
        outcome.add("events", [f"listener: {p}" for p in listener_problems])
        outcome.add("events", [f"events(): {p}" for p in channel_problems])
        if listener_problems and not channel_problems:
            outcome.add(
                "events",
                ["listener: events the events() channel received never reached the stress "
                 "test's listener: a listener subscribed before it raised or was cancelled"],
            )  # fmt: skip
    if not limits.allow_errors:
        outcome.add(
            "error",
            [
                f"message {first + i}: the run ended in an error: {m.error_message}"
                for i, m in enumerate(messages[first:])
                if isinstance(m, AssistantMessage) and m.stop_reason == "error"
            ],
        )
    if raised is not None:
        outcome.add("raised", [f"prompt() raised {_describe(raised)}"])
    if leaked:
        outcome.leaked = len(leaked)
        outcome.add(
            "leak",
            [f"{len(leaked)} task(s) still alive after wait_for_idle(): "
             f"{', '.join(task_names(leaked))}"],
        )  # fmt: skip
    if outcome.landed:
        outcome.latency = t_idle - t_abort[0]
        limit = limits.max_abort_latency
        if limit is not None and outcome.latency > limit:
            outcome.add(
                "slow",
                [f"idle came {outcome.latency * 1e3:,.1f} ms after the abort (limit "
                 f"{limit * 1e3:,.0f} ms): something shields itself from cancellation or "
                 f"keeps working after it"],
            )  # fmt: skip
    if limits.check is not None:
        found = limits.check(agent)
        extra = await found if inspect.isawaitable(found) else found
        outcome.add("check", extra)
    logged = limits.failures.by_run.pop(run, []) if limits.failures is not None else []
    outcome.add("failure", [f"pi_trio logged a failure during the run: {text}" for text in logged])
    outcome.events = len(recorded)
    return outcome


async def stress(
    make_agent: AgentFactory,
    prompt: Prompt = "Go.",
    *,
    runs: int = 2000,
    seed: int | None = None,
    abort: AbortMode = "random",
    concurrency: int = 1,
    progress: Callable[[StressProgress], None] | None = None,
    calibration_runs: int = 5,
    window: float | None = None,
    only_run: int | None = None,
    max_abort_latency: float | None = 1.0,
    run_timeout: float = 60.0,
    allow_errors: bool = False,
    check: Check | None = None,
) -> StressReport:
    """Run ``make_agent()``'s agents ``runs`` times, each aborted at a seeded random moment.

    Args:
        make_agent: returns a fresh ``pt.Agent`` per run (a plain or an async function): your
            tools, hooks, listeners and stream function.
        prompt: what each run is prompted with.
        runs: how many aborted runs.
        seed: the seed of the abort moments (default: a random one, kept in the report).
        abort: "random" (``agent.abort()``), "deadline" (the caller's cancel scope around
            ``prompt()`` is cancelled, as by a ``trio.move_on_after``) or "both" (each run
            draws one).
        concurrency: how many runs go at once (in one ``trio.run``, each its own agent).
        progress: called with a :class:`StressProgress` after every run.
        calibration_runs: unaborted runs that measure the window (their median duration); they
            are checked too, and reported with negative run numbers.
        window: skip calibration and draw moments in ``[0, window)`` seconds (a report's
            ``window``, with its seed, reproduces its moments).
        only_run: run just this run index (with ``seed`` and ``window``: one violation again).
        max_abort_latency: abort->idle above this many seconds is a violation ("slow");
            None: no limit.
        run_timeout: a run not idle after this many seconds is cancelled and reported "hung".
        allow_errors: accept runs that end with stop reason "error" (by default a violation:
            a listener or hook that raised, or a provider that failed).
        check: your own per-run check, called with the idle agent; returns problems.

    Returns:
        A :class:`StressReport`; ``report.ok`` is false when any run broke an invariant.

    Raises:
        ValueError: for settings out of range.
        ValueError: also for an agent with a plain-def tool under an autojump MockClock
            (its thread's time cannot move the virtual clock).
        TypeError: when ``make_agent()`` does not give an Agent (what ``make_agent()`` itself
            raises propagates as it is).

    On cancellation the runs in flight are aborted like any deadline and the ``Cancelled``
    propagates (no report); the instrument is removed either way.
    """
    if runs < 0 or concurrency < 1 or calibration_runs < 0:
        raise ValueError("runs and calibration_runs must be >= 0, concurrency >= 1")
    if abort not in _MODES:
        raise ValueError(f"abort must be 'random', 'deadline' or 'both', not {abort!r}")
    if window is not None and not window >= 0:
        raise ValueError("window must be >= 0 seconds")
    if only_run is not None and not 0 <= only_run < max(runs, only_run + 1):
        raise ValueError("only_run must be a run index (>= 0)")
    seed = random.randrange(2**32) if seed is None else seed
    limits = _Limits(max_abort_latency, run_timeout, allow_errors, check)
    indices = [only_run] if only_run is not None else list(range(runs))

    def planner(run: int, window: float) -> tuple[RunMode, float]:
        return plan_run(seed, run, abort, window)

    return await _drive(
        make_agent, prompt, seed=seed, abort=abort, concurrency=concurrency, progress=progress,
        calibration_runs=calibration_runs, window=window, indices=indices, planner=planner,
        limits=limits,
    )  # fmt: skip


async def _drive(
    make_agent: AgentFactory,
    prompt: Prompt,
    *,
    seed: int,
    abort: AbortMode,
    concurrency: int,
    progress: Callable[[StressProgress], None] | None,
    calibration_runs: int,
    window: float | None,
    indices: list[int],
    planner: Callable[[int, float], tuple[RunMode, float]],
    limits: _Limits,
) -> StressReport:
    """Calibrate (unless ``window`` is given), then run ``indices`` as ``planner`` says."""
    tracker = RunTasks()
    violations: list[Violation] = []
    latencies: list[float] = []
    counts = {"mid_run": 0, "finished_first": 0, "leaked": 0, "events": 0}
    started = trio.current_time()

    async def one(run: int, mode: RunMode, moment: float) -> _Outcome:
        agent = await _build(make_agent)
        outcome = await _one_run(agent, prompt, run, mode, moment, tracker, limits)
        counts["leaked"] += outcome.leaked
        counts["events"] += outcome.events
        if outcome.problems:
            shown: float | None = None if mode == "none" else moment
            kinds = tuple(outcome.problems)
            problems = tuple(p for found in outcome.problems.values() for p in found)
            violations.append(Violation(run, seed, mode, shown, kinds, problems))
        return outcome

    trio.lowlevel.add_instrument(tracker)
    failures = limits.failures = FailureLog(tracker)
    pi_trio_logger = logging.getLogger("pi_trio")
    pi_trio_logger.addHandler(failures)
    try:
        calibrated = 0
        if window is None:
            durations = []
            for index in range(calibration_runs):
                outcome = await one(-1 - index, "none", math.inf)
                durations.append(outcome.duration)
            calibrated = calibration_runs
            window = statistics.median(durations) if durations else 0.0
        pending: Iterator[int] = iter(indices)
        total = len(indices)
        done = 0

        async def worker(plan_window: float) -> None:
            nonlocal done
            for run in pending:
                mode, moment = planner(run, plan_window)
                outcome = await one(run, mode, moment)
                if outcome.landed:
                    counts["mid_run"] += 1
                    if outcome.latency is not None:
                        latencies.append(outcome.latency)
                else:
                    counts["finished_first"] += 1
                done += 1
                if progress is not None:
                    elapsed = trio.current_time() - started
                    eta = elapsed / done * (total - done)
                    progress(StressProgress(done, total, len(violations), elapsed, eta))

        async with trio.open_nursery() as nursery:
            for _ in range(min(concurrency, total)):
                nursery.start_soon(worker, window)
    finally:
        trio.lowlevel.remove_instrument(tracker)
        pi_trio_logger.removeHandler(failures)
    return StressReport(
        runs=total,
        seed=seed,
        abort=abort,
        concurrency=concurrency,
        window=window,
        calibration_runs=calibrated,
        mid_run=counts["mid_run"],
        finished_first=counts["finished_first"],
        violations=tuple(violations),
        leaked_tasks=counts["leaked"],
        latencies=tuple(latencies),
        wall=trio.current_time() - started,
        events=counts["events"],
    )


async def reproduce(
    make_agent: AgentFactory,
    prompt: Prompt,
    violation: Violation,
    *,
    max_abort_latency: float | None = 1.0,
    allow_errors: bool = False,
    check: Check | None = None,
) -> StressReport:
    """Run again the one run of ``violation`` (same mode, same moment) and report it.

    Deterministic under ``trio.testing.MockClock`` (for a deterministic agent); on the real
    clock the abort lands near the same point. Raises and cancels like :func:`stress`.
    """
    limits = _Limits(max_abort_latency, 60.0, allow_errors, check)
    mode, moment = violation.mode, violation.moment
    if mode == "none" or moment is None:
        mode, moment = "none", math.inf
    fixed: tuple[RunMode, float] = (mode, moment)
    return await _drive(
        make_agent, prompt, seed=violation.seed,
        abort="deadline" if mode == "deadline" else "random", concurrency=1, progress=None,
        calibration_runs=0, window=0.0 if moment == math.inf else moment,
        indices=[violation.run], planner=lambda run, window: fixed, limits=limits,
    )  # fmt: skip


async def assert_survives_aborts(
    make_agent: AgentFactory, prompt: Prompt = "Go.", **options: object
) -> StressReport:
    """:func:`stress` as a one-line test: ``await assert_survives_aborts(make_agent, "hi")``.

    ``options`` are :func:`stress`'s keywords (``runs``, ``seed``, ``abort`` ...).

    Raises:
        AssertionError: with the report's summary and every violation, when any run broke an
            invariant.
    """
    report = await stress(make_agent, prompt, **options)  # type: ignore[arg-type]
    if not report.ok:
        raise AssertionError(
            f"{len(report.violations)} of {report.runs} runs broke an invariant:\n"
            + report.summary(limit=len(report.violations))
        )
    return report
