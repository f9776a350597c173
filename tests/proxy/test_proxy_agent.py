"""End to end: a pt.Agent whose stream_fn is pt.stream_proxy, through the pi_trio server."""

from __future__ import annotations

from typing import Any

import httpx
import trio

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.providers._http import pool_in_use

from ..grammar import assert_event_grammar
from ..providers._bodies import COMPLETIONS
from ..providers._server import SSE, ScriptedServer
from ..support import record
from ..transcript import assert_transcript_valid
from ._endless import Endless
from .conftest import TOKEN, StartProxy


def _tool(name: str, key: str, answer: str) -> pt.AgentTool:
    async def execute(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent(f"{answer} ({params[key]})")])

    schema = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}
    return pt.AgentTool(name, name, f"{name} tool", schema, execute)


WEATHER = _tool("get_weather", "city", "sunny")
TIME = _tool("get_time", "tz", "noon")


def _proxied_agent(
    model: pt.Model, url: str, client: httpx.AsyncClient
) -> tuple[pt.Agent, list[pt.AgentEvent]]:
    """An agent whose model is reached through the proxy at ``url`` (what this file tests, so
    built by hand: the scripted model, if any, is behind the proxy), and its events."""
    state = pt.AgentState(system_prompt="Be terse.", model=model, tools=[WEATHER, TIME])
    agent = pt.Agent(state, stream_fn=pt.stream_proxy(url, TOKEN, http_client=client))
    return agent, record(agent)


async def test_prompt_tool_call_result_text_through_the_proxy(
    start_proxy: StartProxy, client
) -> None:
    def answer(context: pt.Context, options: pt.StreamOptions, index: int) -> pt.AssistantMessage:
        result = context.messages[-1]
        assert isinstance(result, pt.ToolResultMessage)
        text = result.content[0]
        assert isinstance(text, pt.TextContent)
        return faux.assistant_message(f"The tool says: {text.text}.")

    scripted = faux.FauxModel(
        [
            faux.assistant_message([faux.tool_call("get_weather", {"city": "Paris"}, id="c1")]),
            answer,
        ]
    )
    server = await start_proxy(stream_fn=scripted)
    agent, events = _proxied_agent(scripted.model, server.url, client)

    await agent.prompt("Weather in Paris?")

    messages = agent.state.messages
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[1].content == [pt.ToolCall("c1", "get_weather", {"city": "Paris"})]
    assert messages[2].content == [pt.TextContent("sunny (Paris)")]
    assert messages[3].content == [pt.TextContent("The tool says: sunny (Paris).")]
    assert agent.state.error_message is None
    assert_event_grammar(events)
    assert_transcript_valid(messages)
    # the second request carried the whole transcript through the wire format
    assert pt.to_json(scripted.calls[1].context.messages) == pt.to_json(messages[:3])
    assert [t.name for t in scripted.calls[1].context.tools] == ["get_weather", "get_time"]


async def test_the_same_over_an_openai_completions_upstream(
    start_proxy: StartProxy, upstream: ScriptedServer, client, upstream_client
) -> None:
    model = COMPLETIONS.model(upstream.url)
    server = await start_proxy(models=[model])
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.tools), SSE(COMPLETIONS.text))
    agent, events = _proxied_agent(model, server.url, client)

    await agent.prompt("Weather in Paris, and the time?")

    messages = agent.state.messages
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert [m.content[0].text for m in messages[2:4]] == ["sunny (Paris)", "noon (UTC)"]
    assert messages[-1].content == [pt.TextContent("Hello world")]
    assert_event_grammar(events)
    second = upstream.requests[1].json()
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["sunny (Paris)", "noon (UTC)"]
    assert pool_in_use(client) == 0 and pool_in_use(upstream_client) == 0


async def test_agent_abort_reaches_the_upstream_stream(start_proxy: StartProxy, client) -> None:
    endless = Endless()
    server = await start_proxy(stream_fn=endless)
    agent, events = _proxied_agent(pt.get_model("faux", "faux-1"), server.url, client)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "Go on forever")
            await endless.reached.wait()
            agent.abort()
        await endless.closed.wait()

    assert isinstance(endless.closed_by, trio.Cancelled)
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("aborted", "Request was aborted")
    assert last.content == [pt.TextContent("tick")]  # the partial text is kept
    assert_event_grammar(events)
    assert pool_in_use(client) == 0


async def test_a_caller_deadline_reaches_the_http_upstream(
    start_proxy: StartProxy, upstream: ScriptedServer, client, upstream_client
) -> None:
    model = COMPLETIONS.model(upstream.url)
    server = await start_proxy(models=[model])
    upstream.script(COMPLETIONS.path, SSE(COMPLETIONS.text[:2], then="stall"))
    agent, _ = _proxied_agent(model, server.url, client)
    streaming = trio.Event()

    def on_event(event: pt.AgentEvent) -> None:
        if (
            isinstance(event, pt.MessageUpdate)
            and event.assistant_message_event.type == "text_delta"
        ):
            streaming.set()

    agent.subscribe(on_event)
    with trio.fail_after(10):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.prompt, "Hi")
                await streaming.wait()
                scope.cancel()
        await upstream.wait_for_hangups(1)
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage) and last.stop_reason == "aborted"
    assert pool_in_use(client) == 0 and pool_in_use(upstream_client) == 0
