"""OpenTelemetry spans (the ``otel`` extra), checked with the SDK's in-memory exporter."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import trio

import pi_trio as pt
import pi_trio.otel
from pi_trio.loop import run_loop
from tests.support import ECHO, PROMPT, SLEEP, calls, faux, loop_setup, make_agent, sleeps

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode  # noqa: E402


@pytest.fixture
def exporter(caplog: pytest.LogCaptureFixture) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pi_trio.otel.configure(tracer_provider=provider)
    PROVIDERS[:] = [provider]
    caplog.set_level(logging.DEBUG, logger="opentelemetry")
    yield exporter
    pi_trio.otel.configure()
    # a context attached in one place and detached in another is logged by the API
    assert [r for r in caplog.records if r.name.startswith("opentelemetry")] == []


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[Any]]:
    spans: dict[str, list[Any]] = {}
    for span in exporter.get_finished_spans():
        spans.setdefault(span.name.split(" ")[0], []).append(span)
    return spans


def parent_of(span: Any) -> int | None:
    return span.parent.span_id if span.parent is not None else None


PROVIDERS: list[Any] = []  # the exporter fixture's provider: the tools' own spans go there


async def _traced_sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    with PROVIDERS[0].get_tracer("tests").start_as_current_span(f"inner {tool_call_id}"):
        await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent("slept")])


TRACED = pt.AgentTool("sleep", "Sleep", "sleeps", SLEEP.parameters, _traced_sleep)


async def test_a_run_with_parallel_tools(exporter: Any, autojump_clock: Any) -> None:
    agent = make_agent([sleeps(0.2, 0.1), faux.assistant_message("done")], [TRACED])
    await agent.prompt("go")
    spans = by_name(exporter)
    [run] = spans["invoke_agent"]
    assert run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.status.status_code is StatusCode.UNSET
    chats = spans["chat"]
    assert len(chats) == 2 and all(parent_of(c) == run.context.span_id for c in chats)
    first = chats[0]
    assert first.name == "chat faux-1"
    assert first.attributes["gen_ai.request.model"] == "faux-1"
    assert first.attributes["gen_ai.provider.name"] == "faux"
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    assert tuple(chats[1].attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    assert first.attributes["gen_ai.usage.output_tokens"] >= 0
    assert "gen_ai.input.messages" not in first.attributes  # content only when asked
    tools = sorted(spans["execute_tool"], key=lambda s: s.attributes["gen_ai.tool.call.id"])
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == ["call_1", "call_2"]
    assert all(parent_of(t) == run.context.span_id for t in tools)
    assert all(t.status.status_code is StatusCode.UNSET for t in tools)
    # each tool's own span nests under that tool's span, not its sibling's
    inner = {s.name: s for s in spans["inner"]}
    for tool in tools:
        call_id = tool.attributes["gen_ai.tool.call.id"]
        assert parent_of(inner[f"inner {call_id}"]) == tool.context.span_id
    assert len({s.context.trace_id for s in exporter.get_finished_spans()}) == 1


async def test_a_failing_tool_span_has_the_error(exporter: Any) -> None:
    async def boom(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        raise KeyError("missing")

    tool = pt.AgentTool("boom", "Boom", "fails", {"type": "object"}, boom)
    agent = make_agent([calls(("boom", {})), faux.assistant_message("done")], [tool])
    await agent.prompt("go")
    [span] = by_name(exporter)["execute_tool"]
    assert span.attributes["error.type"] == "KeyError"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "KeyError: 'missing'"
    assert [e.name for e in span.events] == ["exception"]


async def test_an_abort_mid_batch_ends_every_span(exporter: Any, autojump_clock: Any) -> None:
    agent = make_agent([sleeps(10, 10), faux.assistant_message("never")])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(1)
        agent.abort()
    spans = by_name(exporter)
    [run] = spans["invoke_agent"]
    assert run.attributes["error.type"] == "cancelled"
    assert [t.attributes["error.type"] for t in spans["execute_tool"]] == ["cancelled"] * 2
    assert len(spans["chat"]) == 1  # the aborted shape makes no model call


async def test_an_abort_mid_stream_ends_the_chat_span(exporter: Any, autojump_clock: Any) -> None:
    agent = make_agent([faux.assistant_message("a long answer " * 50)], token_delay=0.01)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "go")
        await trio.sleep(0.5)
        agent.abort()
    [chat] = by_name(exporter)["chat"]
    assert tuple(chat.attributes["gen_ai.response.finish_reasons"]) == ("aborted",)
    assert chat.attributes["error.type"] == "cancelled"


async def test_a_stream_closed_early_leaves_no_open_span(exporter: Any) -> None:
    model = faux.FauxModel([faux.assistant_message("x" * 300)], token_delay=0.001)
    config = pt.AgentLoopConfig(model=model.model, stream_fn=model)
    async with pt.agent_loop([pt.UserMessage("go")], pt.AgentContext("", [], []), config) as rx:
        async for event in rx:
            if event.type == "message_update":
                break  # leave the block mid-stream: the run is aborted
    spans = by_name(exporter)
    assert len(spans["invoke_agent"]) == 1 and len(spans["chat"]) == 1
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached here


async def test_a_run_failure_is_on_the_run_span(exporter: Any) -> None:
    def stop(context: Any) -> bool:
        raise RuntimeError("hook broke")

    agent = make_agent([faux.assistant_message("hi")], should_stop_after_turn=stop)
    await agent.prompt("go")
    [run] = by_name(exporter)["invoke_agent"]
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "RuntimeError"
    assert run.status.description == "hook broke"


async def test_content_is_recorded_only_when_asked(exporter: Any) -> None:
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pi_trio.otel.configure(tracer_provider=provider, capture_content=True)
    agent = make_agent([calls(("echo", {"text": "secret plan"})), faux.assistant_message("ok")])
    await agent.prompt("tell me")
    spans = by_name(exporter)
    chat = spans["chat"][0]
    assert "tell me" in chat.attributes["gen_ai.input.messages"]
    assert "secret plan" in chat.attributes["gen_ai.output.messages"]
    [tool] = spans["execute_tool"]
    assert "secret plan" in tool.attributes["gen_ai.tool.call.arguments"]
    assert "secret plan" in tool.attributes["gen_ai.tool.call.result"]


async def test_disabled_makes_no_spans(exporter: Any) -> None:
    pi_trio.otel.configure(enabled=False)
    await make_agent([calls(("echo", {"text": "x"})), faux.assistant_message("ok")], [ECHO]).prompt(
        "go"
    )
    assert exporter.get_finished_spans() == ()


def test_import_pi_trio_does_not_import_opentelemetry() -> None:
    code = "import sys, pi_trio; print(sorted(m for m in sys.modules if 'opentelemetry' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_without_the_extra_a_run_works_and_records_nothing() -> None:
    code = """
import sys
sys.modules["opentelemetry"] = None  # as if the extra were not installed
import trio, pi_trio as pt
model = pt.faux.FauxModel([pt.faux.assistant_message("hi")])
agent = pt.Agent(pt.AgentState(model=model.model), stream_fn=model)
trio.run(agent.prompt, "go")
assert agent.state.messages[-1].content[0].text == "hi"
print(sorted(m for m in sys.modules if m.startswith("opentelemetry.")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_global_provider_is_used_once_set_and_nothing_is_made_before() -> None:
    code = """
import trio, pi_trio as pt
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pi_trio import _telemetry

def run():
    model = pt.faux.FauxModel([pt.faux.assistant_message("hi")])
    trio.run(pt.Agent(pt.AgentState(model=model.model), stream_fn=model).prompt, "go")

run()  # the API's default proxy provider: no span is made at all
print(_telemetry._settings.tracer)
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
run()
print(sorted(span.name for span in exporter.get_finished_spans()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["None", "['chat faux-1', 'invoke_agent']"]


# --- run_loop(): the coroutine made at the call --------------------------------------------------


class _Counting:
    """The names of the spans started and ended (fed by a span processor)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended: list[str] = []


@pytest.fixture
def spans() -> Iterator[_Counting]:
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    counting = _Counting()

    class Processor(sdk_trace.SpanProcessor):  # type: ignore[misc, name-defined]
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            counting.started.append(span.name)

        def on_end(self, span: Any) -> None:
            counting.ended.append(span.name)

    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(Processor())
    pi_trio.otel.configure(tracer_provider=provider)
    yield counting
    pi_trio.otel.configure()


async def test_a_run_loop_coroutine_never_awaited_leaves_no_open_span(spans: _Counting) -> None:
    """The run's ``invoke_agent`` span starts with the run's first step, not when ``run_loop()``
    makes its coroutine: a coroutine closed (or dropped) unawaited leaves no span open."""
    context, config, sink, _ = loop_setup([faux.assistant_message("hi")])
    run_loop(PROMPT, context, config, sink).close()
    assert spans.started == spans.ended == []
    assert (context.messages, sink.events) == ([], [])  # and nothing ran
    await run_loop(PROMPT, context, config, sink)
    assert sorted(spans.started) == sorted(spans.ended) == ["chat faux-1", "invoke_agent"]
