"""Compaction (pi-coding-agent 1.6's, DESIGN 9.3): a long session over a scripted model with a
small context window never sends a request over the window, its summary is updated rather than
stacked, tool calls keep their results, and a summary that fails or is cancelled leaves the
transcript as it was."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.testing import check_transcript

from .support import READ, ReadingModel, make_scripted_agent, record, request_tokens

faux = pt.faux
WINDOW = 4_000
SETTINGS = pt.Compaction(reserve_tokens=500, keep_recent_tokens=1_000)


def agent_over(model: ReadingModel, **options: Any) -> tuple[pt.Agent, faux.FauxModel]:
    small = attrs.evolve(pt.get_model("faux", "faux-1"), context_window=WINDOW)
    scripted = faux.FauxModel(itertools.repeat(model), model=small)
    return make_scripted_agent(scripted, (READ,), **options)


def compactions(events: list[pt.AgentEvent]) -> list[pt.CompactionEnd]:
    return [e for e in events if isinstance(e, pt.CompactionEnd)]


async def test_a_long_tool_session_never_sends_a_request_over_the_window() -> None:
    model = ReadingModel(turns=300)
    agent, _ = agent_over(model, compaction=SETTINGS)
    events = record(agent)
    await agent.prompt("read the files")
    assert agent.state.error_message is None
    assert len(model.requests) == 301
    over = [request_tokens(c) for c in model.requests if request_tokens(c) > WINDOW]
    assert over == []
    done = compactions(events)
    assert len(done) >= 30 and all(e.summary is not None for e in done)
    messages = agent.state.messages
    assert isinstance(messages[0], pt.CompactionSummary)
    assert messages[0].summary == f"summary {len(done)}"
    assert check_transcript(messages[1:]) == []


async def test_without_compaction_the_same_session_outgrows_the_window() -> None:
    # the test above could not pass by accident: the session does outgrow the window
    model = ReadingModel(turns=30)
    agent, _ = agent_over(model)
    await agent.prompt("read the files")
    assert max(request_tokens(c) for c in model.requests) > WINDOW
    assert model.summary_requests == []


async def test_the_summary_is_updated_not_stacked() -> None:
    model = ReadingModel(turns=40)
    agent, _ = agent_over(model, compaction=SETTINGS)
    await agent.prompt("read the files")
    assert len(model.summary_requests) >= 2
    first, second = model.summary_requests[:2]
    first_prompt = first.messages[0].content
    second_prompt = second.messages[0].content
    assert isinstance(first_prompt, str) and isinstance(second_prompt, str)
    assert "<previous-summary>" not in first_prompt
    assert "<previous-summary>\nsummary 1\n</previous-summary>" in second_prompt
    # each request the model got holds one summary at most, at its head
    for context in model.requests:
        summaries = [
            i
            for i, m in enumerate(context.messages)
            if isinstance(m.content, list)
            and any(isinstance(b, pt.TextContent) and "summary " in b.text for b in m.content)
            and m.role == "user"
        ]
        assert summaries in ([], [0])
    assert sum(isinstance(m, pt.CompactionSummary) for m in agent.state.messages) == 1


async def test_a_tool_call_and_its_result_are_never_split() -> None:
    model = ReadingModel(turns=60)
    agent, _ = agent_over(model, compaction=attrs.evolve(SETTINGS, keep_recent_tokens=700))
    heads: list[pt.AgentMessage] = []

    def after_compaction(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.CompactionEnd) and event.summary is not None:
            heads.append(agent.state.messages[1])
            assert check_transcript(agent.state.messages[1:]) == []

    agent.subscribe(after_compaction)
    await agent.prompt("read the files")
    assert heads and not any(isinstance(m, pt.ToolResultMessage) for m in heads)
    for context in model.requests:
        called: set[str] = set()
        for message in context.messages:
            if isinstance(message, pt.AssistantMessage):
                called |= {call.id for call in message.tool_calls}
            elif isinstance(message, pt.ToolResultMessage):
                assert message.tool_call_id in called


async def test_events_and_the_transcript_after_a_threshold_compaction() -> None:
    model = ReadingModel(turns=12)
    agent, _ = agent_over(model, compaction=SETTINGS)
    events = record(agent)
    await agent.prompt("read the files")
    kinds = [e.type for e in events]
    first = kinds.index("compaction_start")
    assert kinds[first + 1] == "compaction_end"
    # a turn's compaction comes right after its turn_start, before its request
    assert kinds[first - 1] == "turn_start" and kinds[first + 2] == "message_start"
    start = events[first]
    end = events[first + 1]
    assert isinstance(start, pt.CompactionStart) and start.reason == "threshold"
    assert isinstance(end, pt.CompactionEnd) and end.summary == "summary 1"
    assert end.tokens_before > WINDOW - SETTINGS.reserve_tokens
    assert end.error is None and not end.aborted and not end.will_retry
    assert pt.to_json(end)["result"] == {"summary": "summary 1", "tokensBefore": end.tokens_before}


async def test_a_failed_summary_leaves_the_transcript_and_the_run_goes_on() -> None:
    failure = faux.assistant_message([], stop_reason="error", error_message="HTTP 500: oops")
    model = ReadingModel(turns=12, summary=failure)
    agent, _ = agent_over(model, compaction=SETTINGS)
    events = record(agent)
    await agent.prompt("read the files")
    done = compactions(events)
    assert done and all(e.summary is None for e in done)
    assert done[0].error == "Summary request failed: HTTP 500: oops"
    assert agent.state.error_message is None  # a threshold compaction's failure is not the run's
    assert not any(isinstance(m, pt.CompactionSummary) for m in agent.state.messages)
    assert len(model.requests) == 13


async def test_the_summarys_usage_counts_toward_the_budgets() -> None:
    model = ReadingModel(turns=12)
    agent, _ = agent_over(model, compaction=SETTINGS)
    events = record(agent)
    await agent.prompt("read the files")
    assert agent.state.compaction_usage[0] > 0
    end = events[-1]
    assert isinstance(end, pt.AgentEnd)
    # what the 12 tool turns used (the last turn, which answers, is never stopped after):
    # one token more is a limit the turns alone never reach
    tool_turns = [m for m in end.messages if isinstance(m, pt.AssistantMessage) and m.tool_calls]
    limit = sum(m.usage.total_tokens for m in tool_turns) + 1
    budgeted, _ = agent_over(ReadingModel(turns=12), compaction=SETTINGS, max_total_tokens=limit)
    await budgeted.prompt("read the files")
    assert budgeted.state.error_message is not None
    assert "max_total_tokens" in budgeted.state.error_message


async def _prompt_cut_short(agent: pt.Agent, how: str, started: trio.Event) -> None:
    async with trio.open_nursery() as nursery:
        if how == "abort":
            nursery.start_soon(agent.prompt, "read the files")
            await started.wait()
            agent.abort()
        else:
            with trio.move_on_after(5):
                await agent.prompt("read the files")


def _never_summarising(started: trio.Event) -> Any:
    """A summary that sets ``started`` and then waits until it is cancelled."""

    async def slow_summary() -> pt.AssistantMessage:
        started.set()
        await trio.sleep(60)
        raise AssertionError("the summary was not cancelled")

    return slow_summary


@pytest.mark.parametrize("how", ["abort", "deadline"])
async def test_cancelled_mid_summary_the_transcript_is_as_before(
    how: str, autojump_clock: trio.testing.MockClock
) -> None:
    started = trio.Event()
    slow_summary = _never_summarising(started)

    model = ReadingModel(turns=12, summary=slow_summary)
    agent, _ = agent_over(model, compaction=SETTINGS)
    events = record(agent)
    before: list[pt.AgentMessage] = []

    def remember(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.CompactionStart):
            before[:] = list(agent.state.messages)

    agent.subscribe(remember)
    with trio.fail_after(600):  # an abort that never came would hang the test
        await _prompt_cut_short(agent, how, started)
    assert before
    messages = agent.state.messages
    assert messages[: len(before)] == before  # nothing dropped, nothing summarised
    closing = messages[len(before) :]
    assert [m.stop_reason for m in closing] == ["aborted"]  # type: ignore[union-attr]
    end = compactions(events)[-1]
    assert end.aborted and end.summary is None
    kinds = [e.type for e in events]
    assert kinds[-5:] == ["compaction_end", "message_start", "message_end", "turn_end", "agent_end"]


async def test_compact_on_demand() -> None:
    model = ReadingModel(turns=6)
    agent, _ = agent_over(model)  # no compaction setting: compact() uses the defaults...
    await agent.prompt("read the files")
    assert await agent.compact() is None  # ...which keep 20,000 tokens: nothing to cut
    agent.compaction = pt.Compaction(keep_recent_tokens=600)
    events = record(agent)
    count = len(agent.state.messages)
    summary = await agent.compact("keep the file names")
    assert summary is not None and summary.summary == "summary 1"
    assert agent.state.messages[0] is summary
    assert len(agent.state.messages) < count
    assert [e.type for e in events] == ["compaction_start", "compaction_end"]
    assert isinstance(events[0], pt.CompactionStart) and events[0].reason == "manual"
    prompt = model.summary_requests[0].messages[0].content
    assert isinstance(prompt, str) and prompt.endswith("keep the file names")
    assert not agent.is_running


async def test_compact_refuses_while_a_run_is_active() -> None:
    release = trio.Event()

    async def waiting(context: pt.Context, options: Any, index: int) -> pt.AssistantMessage:
        await release.wait()
        return faux.assistant_message("ok")

    agent, _ = make_scripted_agent([waiting], ())
    with trio.fail_after(10):
        await _busy_compact(agent, release)


async def _busy_compact(agent: pt.Agent, release: trio.Event) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "hi")
        with pytest.raises(pt.AgentBusyError, match="compact"):
            await agent.compact()
        release.set()


def test_compaction_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="keep_recent_tokens"):
        pt.Compaction(keep_recent_tokens=0)
    with pytest.raises(ValueError, match="reserve_tokens"):
        pt.Compaction(reserve_tokens=-1)
    with pytest.raises(TypeError, match=r"pt\.Compaction"):
        pt.Agent(compaction=5)  # type: ignore[arg-type]
    agent = pt.Agent()
    with pytest.raises(TypeError, match=r"pt\.Compaction"):
        agent.compaction = "yes"  # type: ignore[assignment]
    assert pt.Agent().compaction is None


@pytest.mark.parametrize("how", ["abort", "deadline"])
async def test_compact_cancelled_leaves_the_transcript(
    how: str, autojump_clock: trio.testing.MockClock
) -> None:
    started = trio.Event()
    slow_summary = _never_summarising(started)

    model = ReadingModel(turns=6)
    agent, _ = agent_over(model)  # the run does not compact
    await agent.prompt("read the files")
    agent.compaction = pt.Compaction(keep_recent_tokens=600)
    model.summary = slow_summary
    before = list(agent.state.messages)
    events = record(agent)
    results: list[object] = []
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:

            async def compact() -> None:
                with trio.move_on_after(5 if how == "deadline" else 10_000) as scope:
                    results.append(await agent.compact())
                if scope.cancelled_caught:
                    results.append("cancelled")

            nursery.start_soon(compact)
            await started.wait()
            if how == "abort":
                agent.abort()
    assert results == ([None] if how == "abort" else ["cancelled"])
    assert agent.state.messages == before
    assert [e.type for e in events] == ["compaction_start", "compaction_end"]
    end = events[-1]
    assert isinstance(end, pt.CompactionEnd) and end.aborted and end.summary is None
    assert not agent.is_running


async def test_a_failing_get_api_key_fails_the_summary_not_the_run() -> None:
    summariser = attrs.evolve(pt.get_model("faux", "faux-1"), provider="summaries")

    def key(provider: str) -> str | None:
        if provider == "summaries":  # asked for the summary's model only
            raise RuntimeError("the vault is closed")
        return None

    model = ReadingModel(turns=12)
    settings = attrs.evolve(SETTINGS, model=summariser)
    agent, _ = agent_over(model, compaction=settings, get_api_key=key)
    events = record(agent)
    await agent.prompt("read the files")
    failed = compactions(events)
    assert failed and all(e.error == "Summary request failed: the vault is closed" for e in failed)
    assert agent.state.error_message is None and model.summary_requests == []


async def test_the_run_s_api_key_never_goes_to_another_provider_s_summary_model() -> None:
    scripted = faux.FauxModel([faux.assistant_message("the summary")] * 2)
    elsewhere = attrs.evolve(scripted.model, provider="elsewhere")
    long = [pt.UserMessage("x" * 4_000), pt.UserMessage("y" * 4_000), pt.UserMessage("z")]
    for summary_model, expected in ((elsewhere, None), (None, "sk-MAIN-SECRET")):
        agent = pt.Agent(
            pt.AgentState(model=scripted.model, messages=list(long)),
            stream_fn=scripted,
            stream_options=pt.StreamOptions(api_key="sk-MAIN-SECRET"),
            compaction=pt.Compaction(model=summary_model, keep_recent_tokens=10),
        )
        assert await agent.compact() is not None
        assert scripted.calls[-1].options.api_key == expected  # its own provider's: kept
