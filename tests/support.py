"""Builders shared by the tests of the agent, the loop, the batch, the inbox and subscriptions.

Only the public API (``import pi_trio as pt``): scripted models (``pt.faux``), a few tools, an
agent or a loop set-up around them, sinks that record, and the checks of pi's aborted shape.
"""

from __future__ import annotations

import gc
import json
import os
import types
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
import pytest
import trio

import pi_trio as pt

from .pi_fixtures import FIXTURE_DIR

faux = pt.faux
MODEL = pt.get_model("faux", "faux-1")
PROMPT: list[pt.AgentMessage] = [pt.UserMessage("go")]
ABORTED_TEXT = "Request was aborted"
TOOL_ABORTED_TEXT = "Tool execution was aborted"

SLEEP_SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}
TEXT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


async def _sleep(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(params["s"])
    return pt.ToolResult([pt.TextContent(f"slept {params['s']}")])


async def _echo(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent(params["text"])])


SLEEP = pt.AgentTool("sleep", "Sleep", "sleeps s seconds", SLEEP_SCHEMA, _sleep)
ECHO = pt.AgentTool("echo", "Echo", "echoes its text", TEXT_SCHEMA, _echo)


def calls(*specs: tuple[str, dict[str, Any]]) -> pt.AssistantMessage:
    """An assistant message calling tools ``(name, arguments)``, ids call_1, call_2, ..."""
    return faux.assistant_message(
        [faux.tool_call(name, args, id=f"call_{i}") for i, (name, args) in enumerate(specs, 1)]
    )


def sleeps(*seconds: float) -> pt.AssistantMessage:
    """An assistant message calling ``sleep`` once per duration, ids call_1, call_2, ..."""
    return calls(*(("sleep", {"s": s}) for s in seconds))


Script = Iterable[faux.FauxResponse] | faux.FauxModel
"""A scripted model's answers (a list, or an iterator taken lazily), or a ready ``FauxModel``."""


def make_scripted_agent(
    script: Script,
    tools: Sequence[pt.AgentTool] = (SLEEP, ECHO),
    *,
    token_delay: float = 0.0,
    chunker: faux.Chunker = faux.by_words,
    record_calls: bool = True,
    system_prompt: str = "",
    messages: Sequence[pt.AgentMessage] = (),
    **options: Any,
) -> tuple[pt.Agent, faux.FauxModel]:
    """An agent over a scripted model, and the model (its ``calls`` are the requests it got).

    With :func:`make_agent`, the way to build a test agent (by hand only where the construction
    is what a test is about). ``token_delay``, ``chunker`` and ``record_calls`` make the model
    (a ready ``FauxModel`` keeps its own); ``tools`` (``()`` for none), ``system_prompt`` and
    ``messages`` start the agent's state; ``options`` go to ``pt.Agent``.
    """
    if isinstance(script, faux.FauxModel):
        assert (token_delay, chunker, record_calls) == (0.0, faux.by_words, True), (
            "token_delay, chunker and record_calls are the ready FauxModel's own"
        )
        scripted = script
    else:
        scripted = faux.FauxModel(
            script, token_delay=token_delay, chunker=chunker, record_calls=record_calls
        )
    state = pt.AgentState(
        system_prompt=system_prompt, model=scripted.model, tools=tools, messages=messages
    )
    return pt.Agent(state, stream_fn=scripted, **options), scripted


def make_agent(
    script: Script, tools: Sequence[pt.AgentTool] = (SLEEP, ECHO), **kwargs: Any
) -> pt.Agent:
    """The agent of :func:`make_scripted_agent` (same arguments), without its model."""
    return make_scripted_agent(script, tools, **kwargs)[0]


def record(agent: pt.Agent) -> list[pt.AgentEvent]:
    """Every event the agent delivers from now on, appended by a listener."""
    events: list[pt.AgentEvent] = []
    agent.subscribe(events.append)
    return events


def trimmed(event_json: dict[str, Any]) -> dict[str, Any]:
    """An event as pi's fixtures record it (message_update keeps only type and index)."""
    if event_json["type"] == "message_update":
        inner = event_json["assistantMessageEvent"]
        return {
            "type": "message_update",
            "assistantMessageEvent": {"type": inner["type"], "contentIndex": inner["contentIndex"]},
        }
    return event_json


class RecordingSink:
    """A loop sink that keeps the events it was sent, and each one's JSON as it was when sent
    (:func:`trimmed`; a partial message changes after its event is sent, the JSON does not)."""

    def __init__(self) -> None:
        self.events: list[pt.AgentEvent] = []
        self.json: list[dict[str, Any]] = []

    async def send(self, event: pt.AgentEvent) -> None:
        self.events.append(event)
        self.json.append(trimmed(pt.to_json(event)))

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


class NullSink:
    """A loop sink that drops everything."""

    async def send(self, event: pt.AgentEvent) -> None:
        pass


def loop_setup(
    script: Sequence[faux.FauxResponse],
    tools: Sequence[pt.AgentTool] = (SLEEP, ECHO),
    *,
    token_delay: float = 0.0,
    **config: Any,
) -> tuple[pt.AgentContext, pt.AgentLoopConfig, RecordingSink, faux.FauxModel]:
    """Context, config (``config`` goes to ``pt.AgentLoopConfig``), sink and scripted model."""
    scripted = faux.FauxModel(list(script), token_delay=token_delay)
    cfg = pt.AgentLoopConfig(model=MODEL, stream_fn=scripted, **config)
    return pt.AgentContext("sys", [], list(tools)), cfg, RecordingSink(), scripted


def last_assistant(messages: Sequence[pt.AgentMessage]) -> pt.AssistantMessage:
    message = messages[-1]
    assert isinstance(message, pt.AssistantMessage), f"last message is {message.role}"
    return message


def tool_results(messages: Sequence[pt.AgentMessage]) -> list[tuple[str, str, bool]]:
    """(tool_call_id, first text, is_error) of every tool result, in transcript order."""
    out = []
    for m in messages:
        if isinstance(m, pt.ToolResultMessage):
            first = m.content[0] if m.content else None
            text = first.text if isinstance(first, pt.TextContent) else ""
            out.append((m.tool_call_id, text, m.is_error))
    return out


async def escaped_from_prompt(agent: pt.Agent, seconds: float = 1.0) -> list[type[BaseException]]:
    """Run ``agent.prompt("go")`` under ``move_on_after(seconds)`` and return the types of
    what escaped ``prompt()`` (``[trio.Cancelled]`` when the deadline ends the run plainly)."""
    escaped: list[BaseException] = []
    with trio.move_on_after(seconds):
        try:
            await agent.prompt("go")
        except BaseException as exc:
            escaped.append(exc)
            raise
    return [type(exc) for exc in escaped]


def assert_aborted(agent: pt.Agent) -> None:
    """The run ended in pi's aborted shape: an aborted assistant message at the tail, its
    error text in the state, and the agent idle with nothing pending."""
    last = last_assistant(agent.state.messages)
    assert (last.stop_reason, last.error_message) == ("aborted", ABORTED_TEXT)
    assert agent.state.error_message == ABORTED_TEXT
    assert agent.state.is_streaming is False
    assert agent.state.streaming_message is None
    assert agent.state.pending_tool_calls == frozenset()


def assert_idle(agent: pt.Agent) -> None:
    assert agent.state.is_streaming is False
    assert agent.state.streaming_message is None
    assert agent.state.pending_tool_calls == frozenset()


def drain(rx: trio.MemoryReceiveChannel[pt.AgentEvent]) -> list[pt.AgentEvent]:
    """Everything waiting in ``rx``, without blocking."""
    received = []
    while True:
        try:
            received.append(rx.receive_nowait())
        except trio.WouldBlock:
            return received


def user_texts(messages: Sequence[pt.AgentMessage]) -> list[str]:
    """The text of every user message (string content or its text blocks joined)."""
    out = []
    for m in messages:
        if isinstance(m, pt.UserMessage):
            if isinstance(m.content, str):
                out.append(m.content)
            else:
                out.append("".join(b.text for b in m.content if isinstance(b, pt.TextContent)))
    return out


def reachable(root: object, target: object) -> bool:
    """Is ``target`` reachable from ``root`` by following references?

    Classes, modules, functions' globals, tasks, coroutines and frames are not followed: through
    them everything is reachable (trio's run state holds every task and so every frame).
    """
    skip = (type, types.ModuleType, types.FrameType, types.CodeType, types.CoroutineType,
            types.GeneratorType, types.AsyncGeneratorType, trio.lowlevel.Task)  # fmt: skip
    seen = {id(root)}
    todo = [root]
    while todo:
        obj = todo.pop()
        if isinstance(obj, types.FunctionType):
            referents = [obj.__closure__, obj.__defaults__, obj.__kwdefaults__]
        else:
            referents = gc.get_referents(obj)
        for ref in referents:
            if ref is target:
                return True
            if ref is None or id(ref) in seen or isinstance(ref, skip):
                continue
            seen.add(id(ref))
            todo.append(ref)
    return False


_CLOCK_KEYS = frozenset({"timestamp", "durationMs"})


def strip_timestamps(value: Any) -> Any:
    """JSON without its ``timestamp`` and ``durationMs`` fields (clock readings differ between
    two runs; pi 0.73.1, whose traces the fixtures are, writes no ``durationMs``)."""
    if isinstance(value, dict):
        return {k: strip_timestamps(v) for k, v in value.items() if k not in _CLOCK_KEYS}
    if isinstance(value, list):
        return [strip_timestamps(v) for v in value]
    return value


class NullRecorder:
    """A ``pt.Recorder`` that keeps nothing (a subclass overrides what a test needs)."""

    def record(self, event: pt.AgentEvent) -> bool:
        return False

    async def flush(self) -> None:
        pass

    def queued(self, kind: str, message: pt.AgentMessage) -> None:
        pass

    def cleared(self, kind: str) -> None:
        pass


def no_postgres(why: str) -> NoReturn:
    """Skip a PostgreSQL test loudly (a warning, and the reason in the summary), or fail it
    when ``$PI_TRIO_REQUIRE_POSTGRES`` is set (CI)."""
    message = f"PostgreSQL tests skipped: {why}"
    if os.environ.get("PI_TRIO_REQUIRE_POSTGRES"):
        pytest.fail(f"{message} (and PI_TRIO_REQUIRE_POSTGRES is set)", pytrace=False)
    warnings.warn(message, stacklevel=2)
    pytest.skip(message)


def require_psycopg() -> None:
    """Go on only where psycopg is installed (else :func:`no_postgres`)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        no_postgres("psycopg is not installed (pip install -e '.[dev,postgres]')")


# --- a long session for compaction ----------------------------------------------------------

RESULT = "lorem ipsum " * 170  # ~2,000 characters: ~500 tokens a tool result


async def _read(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent(f"{params['path']}: {RESULT}")])


READ = pt.AgentTool(
    "read",
    "Read",
    "reads a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    _read,
)


def request_tokens(context: pt.Context) -> int:
    """A request's size as this test's model counts it: every character of what it is sent,
    system prompt included, / 4 (no call into pi_trio's own estimate)."""
    chars = len(context.system_prompt or "")
    for message in context.messages:
        content = message.content
        if isinstance(content, str):
            chars += len(content)
            continue
        for block in content:
            if isinstance(block, pt.TextContent):
                chars += len(block.text)
            elif isinstance(block, pt.ToolCall):
                chars += len(block.name) + len(str(block.arguments))
    return chars // 4


class ReadingModel:
    """A scripted model (a step for ``faux.FauxModel``) that reads files for ``turns`` turns,
    then answers; a request without tools is a summary request, answered "summary N". It
    reports its input as :func:`request_tokens`, as a real model reports usage."""

    def __init__(self, turns: int, summary: Any = None) -> None:
        self.turns = turns
        self.turn = 0
        self.requests: list[pt.Context] = []
        self.summary_requests: list[pt.Context] = []
        self.summary = summary  # replaces the summary answer: a message, or an async function

    async def __call__(self, context: pt.Context, options: Any, index: int) -> pt.AssistantMessage:
        # a request's messages are a view of the transcript for that request only (compaction
        # rewrites the list later): keep a copy
        context = attrs.evolve(context, messages=list(context.messages))
        tokens = request_tokens(context)
        usage = pt.Usage(input=tokens, output=20, total_tokens=tokens + 20)
        if not context.tools:
            self.summary_requests.append(context)
            if callable(self.summary):
                return await self.summary()  # type: ignore[no-any-return]
            if self.summary is not None:
                return self.summary  # type: ignore[no-any-return]
            text = f"summary {len(self.summary_requests)}"
            return faux.assistant_message(text, usage=usage)
        self.requests.append(context)
        self.turn += 1
        if self.turn <= self.turns:
            call = faux.tool_call("read", {"path": f"f{self.turn}.txt"}, id=f"c{self.turn}")
            return faux.assistant_message([call], usage=usage)
        return faux.assistant_message("done", usage=usage)


def with_future_fields(value: Any, counter: list[int], parent: str = "") -> Any:
    """``value`` with an unknown key added to every object (but ``sections``, whose values
    are texts, and ``toolsRemoved``'s references, which are read as names)."""
    if isinstance(value, list):
        if parent == "toolsRemoved":
            return value
        return [with_future_fields(item, counter) for item in value]
    if isinstance(value, dict):
        out = {k: with_future_fields(v, counter, k) for k, v in value.items()}
        if parent != "sections":
            counter[0] += 1
            out[f"zzFuture{counter[0]}"] = {"n": counter[0], "list": [1, "two", None]}
        return out
    return value


_PI16 = Path(__file__).parent / "data" / "pi16"


def recorded_json() -> Iterator[tuple[str, Any, Any]]:
    """``(where, JSON, type)`` of every message, event and context pi recorded."""
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        fixture = json.loads(path.read_text())
        for key in ("initialMessages", "finalMessages"):
            for item in fixture.get(key) or []:
                yield f"{path.name}:{key}", item, pt.AgentMessage
        for item in fixture.get("events") or []:
            if "message" in item or item["type"] != "message_update":  # recorded without it
                yield f"{path.name}:events", item, pt.AgentEvent
    traces = json.loads((_PI16 / "traces.json").read_text())
    for item in traces["messages"]:
        yield "traces.json:messages", item, pt.AgentMessage
    for item in traces["events"]:
        yield "traces.json:events", item, pt.AgentEvent
    for path in sorted(_PI16.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") == "message":
                yield f"{path.name}:message", entry["message"], pt.AgentMessage


MISSED = object()
"""What :func:`fast_and_checked` gives for a reader that does not take the JSON."""


def fast_and_checked(data: Any, type_: Any) -> tuple[Any, Any]:
    """What ``pt.from_json``'s generated reader and its checked path each make of ``data``
    (:data:`MISSED` where the reader does not take it; the exception's type where the checked
    path refuses it)."""
    converter = pt.wire.default_converter.converter
    reader = converter.readers.reader(type_)
    assert reader is not None, f"no generated reader for {type_}"
    try:
        fast = reader(data)
    except Exception:
        fast = MISSED
    try:
        checked = converter.structure(data, type_)
    except Exception as exc:
        checked = type(exc)
    return fast, checked


SAMPLE_MESSAGES: list[pt.AgentMessage] = [
    pt.UserMessage("plain text", timestamp=5),
    pt.UserMessage([pt.TextContent("look"), pt.ImageContent("aGk=", "image/png")], timestamp=6),
    pt.AssistantMessage(
        [
            pt.ThinkingContent("hmm", thinking_signature="sig", redacted=True),
            pt.TextContent("answer", text_signature="ts"),
            pt.ToolCall("c1", "lookup", {"q": [1, 2.5, None, {"deep": True}]}, "thought"),
        ],
        api="anthropic-messages",
        provider="anthropic",
        model="m",
        usage=pt.Usage(3, 4, 1, 2, 10, pt.UsageCost(0.1, 0.2, 0, 0.05, 0.35)),
        stop_reason="toolUse",
        timestamp=7,
        response_id="r1",
        response_model="m-2024",
        duration_ms=12.5,
        end_turn=True,
    ),
    pt.AssistantMessage(
        [], api="x", provider="y", model="z", stop_reason="error", error_message="boom"
    ),
    pt.ToolResultMessage(
        "c1",
        "lookup",
        [pt.TextContent("found"), pt.ImageContent("aGk=", "image/jpeg")],
        details={"rows": [1, 2], "interrupted": None},
        is_error=False,
        timestamp=8,
        usage=pt.Usage(1, 1, 0, 0, 2),
    ),
    pt.ToolResultMessage("c2", "lookup", [pt.TextContent("no")], is_error=True, timestamp=9),
]
"""Messages of every role and block kind, with optional fields set and unset."""


def long_history(turns: int = 8) -> list[pt.AgentMessage]:
    """A transcript of ``turns`` questions of ~400 tokens each, answered: enough to compact."""
    history: list[pt.AgentMessage] = []
    for index in range(turns):
        history += [pt.UserMessage(f"q{index} " + "x" * 1_600), faux.assistant_message(f"a{index}")]
    return history
