"""Mistakes a new user makes are refused where they are made, saying what to do instead."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from .support import make_agent, make_scripted_agent


async def not_a_tool(city: str) -> str:
    return city


@pt.tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_a_bare_function_in_tools_is_refused_at_the_constructor() -> None:
    with pytest.raises(TypeError, match=r"tools\[1\] is the function not_a_tool\(\), not an "
                       r"AgentTool: decorate it with @pt.tool"):  # fmt: skip
        pt.AgentState(tools=[weather, not_a_tool])  # type: ignore[list-item]


def test_a_bare_function_assigned_to_tools_is_refused_at_the_assignment() -> None:
    state = pt.AgentState()
    with pytest.raises(TypeError, match=r"tools\[0\] is the function not_a_tool\(\)"):
        state.tools = [not_a_tool]  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"tools\[0\] is a str, not an AgentTool: give a pt"):
        state.tools = ["weather"]  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"tools must be a list of AgentTool, got an? \w+; write"):
        state.tools = weather  # type: ignore[assignment]
    assert state.tools == []
    state.tools = [weather]
    assert state.tools == [weather]


async def test_an_agent_without_a_model_says_how_to_set_one() -> None:
    agent = pt.Agent()
    with pytest.raises(ValueError, match=r"no model: .*pt\.AgentState\(model=pt\.get_model\("):
        await agent.prompt("Hi!")
    agent.state.messages = [pt.UserMessage("Hi!")]
    with pytest.raises(ValueError, match="no model"):
        await agent.continue_()
    assert agent.state.messages == [
        pt.UserMessage("Hi!", timestamp=agent.state.messages[0].timestamp)
    ]


async def test_the_placeholder_model_is_fine_with_a_custom_stream_fn() -> None:
    scripted = faux.FauxModel([faux.assistant_message("hello")])
    agent = pt.Agent(stream_fn=scripted)
    await agent.prompt("Hi!")
    assert agent.state.messages[-1].content == [pt.TextContent("hello")]  # type: ignore[union-attr]


async def test_busy_error_names_the_python_method(autojump_clock: Any) -> None:
    agent = make_agent([faux.assistant_message("hello")], (), token_delay=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "one")
        with pytest.raises(pt.AgentBusyError, match=r"steer\(\) or follow_up\(\)"):
            await agent.prompt("two")
        agent.abort()


async def test_complete_simple_with_a_string_says_to_build_a_context() -> None:
    model = pt.get_model("faux", "faux-1")
    with pytest.raises(TypeError, match=r"context must be a pt.Context, got str: write "
                       r"pt.Context\(messages=\[pt.UserMessage\('Hi!'\)\]\)"):  # fmt: skip
        await pt.complete_simple(model, "Hi!")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"model must be a pt.Model, got str"):
        await pt.complete_simple("faux/faux-1", pt.Context())  # type: ignore[arg-type]


async def test_an_unknown_api_is_a_programmer_error_that_raises() -> None:
    model = attrs.evolve(pt.get_model("faux", "faux-1"), api="no-such-api")
    with pytest.raises(pt.ProviderNotFoundError, match="no-such-api"):
        await pt.complete_simple(model, pt.Context(messages=[pt.UserMessage("Hi!")]))


async def test_faux_model_takes_an_iterator_lazily(autojump_clock: Any) -> None:
    taken: list[int] = []

    def endless() -> Iterator[pt.AssistantMessage]:
        for n in itertools.count():
            taken.append(n)
            if n > 10:
                raise AssertionError("read ahead of the calls")  # the old eager deque()
            yield faux.assistant_message(f"answer {n}")

    scripted = faux.FauxModel(endless())
    assert taken == []
    agent = make_agent(scripted, ())
    for prompt in ("one", "two", "three"):
        await agent.prompt(prompt)
    assert taken == [0, 1, 2]
    answers = [m for m in agent.state.messages if isinstance(m, pt.AssistantMessage)]
    assert [a.content for a in answers] == [[pt.TextContent(f"answer {n}")] for n in range(3)]
    assert scripted.pending_count == 0  # an iterator's steps are not counted


async def test_faux_model_repeat_answers_forever(autojump_clock: Any) -> None:
    agent, scripted = make_scripted_agent(itertools.repeat(faux.assistant_message("again")), ())
    await agent.prompt("one")
    scripted.append_responses([faux.assistant_message("never reached")])  # after an endless one
    await agent.prompt("two")
    texts = [m.content for m in agent.state.messages if isinstance(m, pt.AssistantMessage)]
    assert texts == [[pt.TextContent("again")]] * 2
    scripted.set_responses(iter([faux.assistant_message("last")]))
    scripted.append_responses([faux.assistant_message("after")])
    for prompt in ("three", "four", "five"):
        await agent.prompt(prompt)
    answers = [m for m in agent.state.messages if isinstance(m, pt.AssistantMessage)][-3:]
    assert [a.content for a in answers[:2]] == [[pt.TextContent("last")], [pt.TextContent("after")]]
    assert answers[2].stop_reason == "error"  # the script is over


def test_a_models_name_where_a_model_goes_says_how_to_get_the_model() -> None:
    hint = r"pt\.get_model\('anthropic', 'claude-sonnet-4-5'\) makes one of that name"
    with pytest.raises(
        TypeError, match="model must be a pt.Model, got 'anthropic/claude-s.*" + hint
    ):
        pt.AgentState(model="anthropic/claude-sonnet-4-5")  # type: ignore[arg-type]
    state = pt.AgentState()
    with pytest.raises(TypeError, match=hint):
        state.model = "anthropic/claude-sonnet-4-5"  # type: ignore[assignment]
    assert state.model is pt.AgentState().model  # unchanged: the placeholder


def test_a_model_where_the_state_goes_is_refused() -> None:
    model = pt.get_model("anthropic", "claude-sonnet-4-5")
    with pytest.raises(TypeError, match=r"write pt\.Agent\(pt\.AgentState\(model=model\)\)"):
        pt.Agent(model)  # type: ignore[arg-type]


def test_subscribing_what_a_listener_returned_is_refused() -> None:
    agent = make_agent([])

    def listener(event: pt.AgentEvent) -> None:
        pass

    with pytest.raises(TypeError, match=r"not subscribe\(listener\(\.\.\.\)\)"):
        agent.subscribe(listener(None))  # type: ignore[arg-type, func-returns-value]


async def test_a_store_used_without_async_with_says_so(tmp_path: Any) -> None:
    opener = pt.open_session_store(tmp_path / "s.db")
    with pytest.raises(AttributeError, match=r"async with pt\.open_session_store"):
        opener.open_agent("s")  # type: ignore[attr-defined]
    async with opener as store:  # the same object still opens the store
        assert await store.list_sessions() == []


async def test_a_directory_as_a_store_path_names_it(tmp_path: Any) -> None:
    with pytest.raises(IsADirectoryError, match="is a directory: give a file in it"):
        async with pt.open_session_store(tmp_path):
            pass


async def test_open_agent_with_create_false_refuses_an_unknown_id(tmp_path: Any) -> None:
    scripted = faux.FauxModel([faux.assistant_message("hi")])
    state = pt.AgentState(model=scripted.model)
    async with pt.open_session_store(tmp_path / "s.db") as store:
        async with store.open_agent("support-42", initial_state=state, stream_fn=scripted) as a:
            await a.prompt("hello")
        with pytest.raises(pt.SessionNotFoundError, match="no session 'support-24'") as caught:
            async with store.open_agent("support-24", create=False):
                pass
        assert caught.value.session_id == "support-24"
        assert [info.session_id for info in await store.list_sessions()] == ["support-42"]
        async with store.open_agent("support-42", create=False) as again:
            assert [m.role for m in again.state.messages] == ["user", "assistant"]


def test_a_generator_function_is_not_a_tool() -> None:
    async def stream_rows(n: int) -> Any:
        yield n

    def rows(n: int) -> Any:
        yield n

    for fn in (stream_rows, rows):
        with pytest.raises(TypeError, match="a generator function is not a tool; return"):
            pt.tool(fn)

    def execute(call_id: str, params: Any, on_update: Any) -> Any:
        yield "partial"

    with pytest.raises(TypeError, match=r"execute must be a function .*: report progress with"):
        pt.AgentTool("rows", "rows", "rows", {"type": "object"}, execute)


@pytest.mark.parametrize("prepare", ["not callable", "async"])
def test_prepare_arguments_is_a_plain_function(prepare: str) -> None:
    async def rename(arguments: dict[str, Any]) -> dict[str, Any]:
        return arguments

    async def execute(call_id: str, params: Any, on_update: Any) -> str:
        return "ran"

    got = "an async function" if prepare == "async" else "'not callable'"
    with pytest.raises(TypeError, match=f"prepare_arguments must be a plain function .*got {got}"):
        pt.AgentTool(
            "t", "T", "t", {"type": "object"}, execute,
            prepare_arguments=rename if prepare == "async" else prepare,  # type: ignore[arg-type]
        )  # fmt: skip
    with pytest.raises(TypeError, match="execute must be a function"):
        pt.AgentTool("rows", "rows", "rows", {"type": "object"}, None)  # type: ignore[arg-type]


def test_a_subagent_factory_that_cannot_make_an_agent_is_refused_at_once() -> None:
    from pi_trio.subagents import subagent_tool

    async def make(call_id: str, params: Any) -> pt.Agent:  # its coroutine is no agent
        return pt.Agent()

    for factory in (None, make):
        with pytest.raises(TypeError, match="agent_factory must be a plain function returning"):
            subagent_tool("helper", "does things", factory)  # type: ignore[arg-type]
    subagent_tool("helper", "does things", lambda call_id, params: pt.Agent())  # fine


def test_a_wrapper_hiding_an_async_function_or_a_generator_is_caught() -> None:
    import functools

    async def add(x: int) -> int:
        return x + 1

    @functools.wraps(add)
    def hidden(*args: Any, **kwargs: Any) -> Any:  # looks sync: returns add's coroutine
        return add(*args, **kwargs)

    def rows(x: int) -> Any:
        yield x

    @functools.wraps(rows)
    def hidden_rows(*args: Any, **kwargs: Any) -> Any:
        return rows(*args, **kwargs)

    for fn, made in ((hidden, "coroutine"), (hidden_rows, "generator")):
        tool = pt.tool(fn)
        with pytest.raises(TypeError, match=f"the tool returned a {made} it never ran"):
            tool.execute("c1", tool.validate({"x": 1}), None)  # type: ignore[arg-type]

    class Rows:
        def __call__(self, call_id: str, params: Any, on_update: Any) -> Any:
            yield "partial"

    with pytest.raises(TypeError, match="execute must be a function"):
        pt.AgentTool("rows", "rows", "rows", {"type": "object"}, Rows())
    pt.AgentTool("rows", "rows", "rows", {"type": "object"}, Rows)  # a class: makes an instance


async def test_an_async_tool_that_forgets_an_await_says_so() -> None:
    async def later(x: int) -> int:
        return x

    @pt.tool
    async def add(x: int) -> Any:
        return later(x)  # the await forgotten

    with pytest.raises(TypeError, match="returned a coroutine it never ran \\(an await missed"):
        await add.execute("c1", add.validate({"x": 1}), None)  # type: ignore[arg-type,misc]
