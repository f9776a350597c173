"""Random scripts, random tools, random abort times: the grammar and the transcript always hold."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pi_trio as pt
from pi_trio.providers import faux

from .grammar import assert_event_grammar
from .support import RecordingSink
from .transcript import assert_transcript_valid

MODEL = pt.get_model("faux", "faux-1")
SCHEMA = {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}


async def _work(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["ms"] / 1000)
    await on_update(pt.ToolResult([pt.TextContent("half way")]))
    return pt.ToolResult([pt.TextContent("done")])


async def _fail(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["ms"] / 1000)
    raise RuntimeError("tool failed")


async def _finish(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["ms"] / 1000)
    return pt.ToolResult([pt.TextContent("finished")], terminate=True)


TOOLS = [
    pt.AgentTool("work", "Work", "works", SCHEMA, _work),
    pt.AgentTool("fail", "Fail", "fails", SCHEMA, _fail),
    pt.AgentTool("finish", "Finish", "finishes", SCHEMA, _finish),
    pt.AgentTool("blocked", "Blocked", "is blocked", SCHEMA, _work),
    pt.AgentTool("serial", "Serial", "runs alone", SCHEMA, _work, execution_mode="sequential"),
]

tool_calls = st.builds(
    lambda name, ms, bad: (name, {"ms": "soon"} if bad else {"ms": ms}),
    st.sampled_from(["work", "fail", "finish", "blocked", "serial", "missing"]),
    st.integers(0, 3000),
    st.sampled_from([False] * 5 + [True]),  # sometimes arguments that fail validation
)

steps = st.builds(
    lambda thinking, text, calls, stop: (thinking, text, calls, stop),
    st.one_of(st.none(), st.text(max_size=20)),
    st.one_of(st.none(), st.text(min_size=1, max_size=40)),
    st.lists(tool_calls, max_size=5),
    st.sampled_from(["normal"] * 6 + ["error", "length"]),
)


def _message(index: int, step: tuple[Any, ...]) -> pt.AssistantMessage:
    thinking, text, calls, stop = step
    content: list[pt.AssistantContent] = []
    if thinking is not None:
        content.append(faux.thinking(thinking))
    if text is not None:
        content.append(faux.text(text))
    for n, (name, args) in enumerate(calls):
        content.append(faux.tool_call(name, args, id=f"t{index}_{n}"))
    if stop == "error":
        return faux.assistant_message(content, stop_reason="error", error_message="flaky")
    if stop == "length":
        return faux.assistant_message(content, stop_reason="length")
    return faux.assistant_message(content or "ok")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(steps, min_size=1, max_size=4),
    abort_after=st.one_of(st.none(), st.floats(0, 8)),
    mode=st.sampled_from(["parallel", "sequential"]),
)
@pytest.mark.slow  # hundreds of random runs
def test_random_runs_keep_grammar_and_transcript(
    script: list[tuple[Any, ...]], abort_after: float | None, mode: str
) -> None:
    messages = [_message(i, step) for i, step in enumerate(script)]
    messages.append(faux.assistant_message("final"))
    sink = RecordingSink()
    context = pt.AgentContext("sys", [], TOOLS)
    scripted = faux.FauxModel(messages, token_delay=0.05)

    def block(ctx: pt.BeforeToolCallContext) -> pt.BeforeToolCallResult | None:
        return pt.BeforeToolCallResult(block=True) if ctx.tool_call.name == "blocked" else None

    config = pt.AgentLoopConfig(
        model=MODEL,
        stream_fn=scripted,
        tool_execution=mode,  # type: ignore[arg-type]
        before_tool_call=block,
    )

    async def main() -> bool:
        with trio.move_on_after(abort_after if abort_after is not None else 1e9) as scope:
            await pt.run_agent_loop([pt.UserMessage("go")], context, config, sink)
        return scope.cancelled_caught

    aborted = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert_event_grammar(sink.events)
    assert_transcript_valid(context.messages)
    ended = [e.message for e in sink.events if isinstance(e, pt.MessageEnd)]
    assert ended == context.messages  # every message reached the sink, in transcript order
    last = context.messages[-1]
    if aborted:
        assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"
        assert last.error_message == "Request was aborted"
    else:
        assert not isinstance(last, pt.AssistantMessage) or last.stop_reason != "aborted"
