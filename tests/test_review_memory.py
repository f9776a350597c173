"""Review of the memory cuts of issue 19 (FauxModel's list script, the loop's taken list):
what a hostile user can do to them."""

from __future__ import annotations

import tracemalloc

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
