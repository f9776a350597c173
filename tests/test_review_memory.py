"""Review of the memory cuts of issue 19 (FauxModel's list script, the loop's taken list):
what a hostile user can do to them."""

from __future__ import annotations

import tracemalloc

import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux


def _faux_bytes(snapshot: tracemalloc.Snapshot) -> int:
    kept = snapshot.filter_traces([tracemalloc.Filter(True, faux.__file__)])
    return sum(stat.size for stat in kept.statistics("filename"))


def test_a_script_kept_a_step_ahead_does_not_grow_with_each_call() -> None:
    # A long-lived scripted model that is appended to before each call, with one step still
    # queued, never runs its script out: the taken steps' cleared slots must not pile up.
    answer = faux.assistant_message("ok")
    scripted = faux.FauxModel([answer], record_calls=False)
    context = pt.Context("", [], [])
    options = pt.StreamOptions()

    def calls(count: int) -> None:
        for _ in range(count):
            scripted.append_responses([answer])
            scripted.stream(scripted.model, context, options)  # takes its step at call time

    calls(100)
    tracemalloc.start()
    try:
        before = _faux_bytes(tracemalloc.take_snapshot())
        calls(20_000)
        grown = _faux_bytes(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()
    assert (scripted.pending_count, scripted.call_count) == (1, 20_100)
    assert grown < 2_000  # 20,000 cleared slots would be ~160 KB


async def test_steps_come_in_order_across_appends_while_part_taken() -> None:
    # The script's cleared slots are dropped as it goes; what is left keeps its order.
    seen: list[tuple[int, int]] = []

    def step(tag: int) -> faux.FauxFactory:
        def answer(
            context: pt.Context, options: pt.StreamOptions, index: int
        ) -> pt.AssistantMessage:
            seen.append((tag, index))
            return faux.assistant_message(str(tag))

        return answer

    scripted = faux.FauxModel([step(0), step(1), step(2)])
    context = pt.Context("", [], [])
    tag = 3
    for round_ in range(6):
        for _ in range(round_ % 3 + 1):
            async with scripted.stream(scripted.model, context, pt.StreamOptions()) as events:
                async for _event in events:
                    pass
        scripted.append_responses([step(tag), step(tag + 1)])
        tag += 2
    for _ in range(scripted.pending_count):  # bounded: a broken script may never run out
        async with scripted.stream(scripted.model, context, pt.StreamOptions()) as events:
            async for _event in events:
                pass
    assert [t for t, _ in seen] == list(range(tag))
    assert [i for _, i in seen] == list(range(tag))


def _text(message: pt.AgentMessage) -> str:
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else "".join(b.text for b in content)


def _user_texts(messages: list[pt.AgentMessage]) -> list[str]:
    return [_text(m) for m in messages if isinstance(m, pt.UserMessage)]


async def test_taken_messages_start_in_the_order_taken(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The run's taken messages are kept next-last (starting one pops the list's end, so a
    # prompt of 100,000 messages is not announced in quadratic time): the order they start in
    # is still the order the run took them, prompts first, then a steering batch.
    scripted = faux.FauxModel(
        [faux.assistant_message("one two three"), faux.assistant_message("done")],
        token_delay=0.1,
    )
    agent = pt.Agent(pt.AgentState(model=scripted.model), stream_fn=scripted, steering_mode="all")
    started: list[str] = []
    agent.subscribe(
        lambda e: (
            started.append(_text(e.message))
            if isinstance(e, pt.MessageStart) and isinstance(e.message, pt.UserMessage)
            else None
        )
    )
    prompts = [f"p{i}" for i in range(5)]
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, [pt.UserMessage(text) for text in prompts])
        await trio.sleep(0.15)  # the first answer is streaming
        for i in range(4):
            agent.steer(f"s{i}")
    expected = [*prompts, "s0", "s1", "s2", "s3"]
    assert started == expected
    assert _user_texts(agent.state.messages) == expected


async def test_an_abort_mid_announcement_ends_the_rest_in_order() -> None:
    # Cut short while it announces its prompts, the run closes the transcript with the ones
    # it had not started yet, in the order they were given.
    scripted = faux.FauxModel([faux.assistant_message("never")])
    agent = pt.Agent(pt.AgentState(model=scripted.model), stream_fn=scripted)
    held = trio.Event()

    async def hold_on_p1(event: pt.AgentEvent) -> None:
        if isinstance(event, pt.MessageStart) and _text(event.message) == "p1":
            held.set()
            await trio.sleep_forever()

    agent.subscribe(hold_on_p1)
    prompts = [f"p{i}" for i in range(6)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, [pt.UserMessage(text) for text in prompts])
        await held.wait()
        agent.abort()
    assert _user_texts(agent.state.messages) == prompts
    assert scripted.call_count == 0


def test_no_module_outgrows_the_size_rule() -> None:
    # The rule of /work/shared/tools/structure_check.py (STYLE.md): 500 lines at most, 650 for
    # the four wire API translations. _Run's __slots__ took loop/_run.py to 525.
    from pathlib import Path

    wire = {"openai_completions.py", "openai_responses.py", "anthropic.py", "google.py"}
    root = Path(pt.__file__).parent
    too_long = {}
    for module in sorted(root.rglob("*.py")):
        with module.open(encoding="utf-8") as lines:
            count = sum(1 for _ in lines)
        if count > (650 if module.name in wire else 500):
            too_long[str(module.relative_to(root))] = count
    assert too_long == {}
