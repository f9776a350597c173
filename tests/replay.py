"""Replaying pi's recorded scenarios through pi_trio: the tools, hooks and script of each one.

Each fixture names its tools and hooks in words (``config``); this module rebuilds them so the
same script produces, through pi_trio, the events and transcript pi recorded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import trio

import pi_trio as pt
from pi_trio.providers import faux

from .pi_fixtures import load

SCRIPTED_MODEL = pt.Model(
    id="scripted-1", name="scripted", api="scripted", provider="scripted", base_url=""
)
SYSTEM_PROMPT = "You are a scripted test model."

_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
_PAIR = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


def _echoed(text: str) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent(text)], details={"echoed": text})


async def _echo(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return _echoed(params["text"])


async def _slow_echo(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.sleep(0.030)
    return _echoed(params["text"])


async def _pair(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    text = json.dumps(params, separators=(",", ":"))
    return pt.ToolResult([pt.TextContent(text)], details={"params": params})


async def _fail(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    raise Exception("boom")


async def _finish(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    return pt.ToolResult([pt.TextContent(params["text"])], {"finished": True}, terminate=True)


async def _progress(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    for pct in (25, 75):
        await on_update(pt.ToolResult([pt.TextContent(f"{pct}%")], details={"pct": pct}))
    return pt.ToolResult([pt.TextContent("100%")], details={"pct": 100})


async def _legacy_echo(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await on_update(pt.ToolResult([pt.TextContent("working")], details={}))
    return _echoed(params["text"])


def _rename_message(args: dict[str, Any]) -> dict[str, Any]:
    if "message" in args and "text" not in args:
        args = {k: v for k, v in args.items() if k != "message"} | {"text": args["message"]}
    return args


def make_tool(name: str) -> pt.AgentTool:
    table: dict[str, tuple[Any, Any, dict[str, Any]]] = {
        "echo": (_echo, _TEXT, {}),
        "slow_echo": (_slow_echo, _TEXT, {}),
        "seq_echo": (_echo, _TEXT, {"execution_mode": "sequential"}),
        "pair": (_pair, _PAIR, {}),
        "fail": (_fail, _EMPTY, {}),
        "finish": (_finish, _TEXT, {}),
        "progress": (_progress, _EMPTY, {}),
        "legacy_echo": (_legacy_echo, _TEXT, {"prepare_arguments": _rename_message}),
    }
    execute, schema, extra = table[name]

    async def in_pi_order(tool_call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
        # pi runs tools that finish at once in source order (microtasks); trio leaves tasks
        # woken together in no particular order. A microsecond of virtual time per source
        # index (the tests run on MockClock) reproduces pi's order without changing the rest.
        await trio.sleep(int(tool_call_id.rsplit("_", 1)[1]) * 1e-6)
        result: pt.ToolResult = await execute(tool_call_id, params, on_update)
        return result

    return pt.AgentTool(
        name=name, label=name, description=f"{name} tool", parameters=schema,
        execute=in_pi_order, **extra,
    )  # fmt: skip


def fixture_tools(data: dict[str, Any]) -> list[pt.AgentTool]:
    return [make_tool(entry.split(" ")[0]) for entry in data["config"]["tools"]]


def script_steps(data: dict[str, Any]) -> list[faux.FauxResponse]:
    """The fixture's script as faux responses (a no-start error becomes an exception step)."""
    steps: list[faux.FauxResponse] = []
    for step in data["script"]:
        if step.get("noStart"):
            steps.append(ConnectionError(step["errorMessage"]))
            continue
        content = [pt.from_json(block, pt.AssistantContent) for block in step["content"]]
        steps.append(
            faux.assistant_message(
                content,
                stop_reason=step.get("stopReason"),
                error_message=step.get("errorMessage"),
            )
        )
    return steps


def fixture_hooks(name: str) -> dict[str, Any]:
    """before/after hooks and context hooks of the scenarios that have them."""
    hooks: dict[str, Any] = {}
    if name == "O09a":

        async def before(ctx: pt.BeforeToolCallContext) -> pt.BeforeToolCallResult | None:
            if ctx.tool_call.id == "call_2":
                return pt.BeforeToolCallResult(block=True, reason="not allowed")
            return None

        hooks["before_tool_call"] = before
    elif name == "O09b":
        hooks["before_tool_call"] = lambda ctx: pt.BeforeToolCallResult(block=True)
    elif name == "O09c":

        async def failing_before(ctx: pt.BeforeToolCallContext) -> None:
            raise Exception("before hook failed")

        hooks["before_tool_call"] = failing_before
    elif name == "O10":

        async def after(ctx: pt.AfterToolCallContext) -> pt.AfterToolCallResult | None:
            if ctx.tool_call.id == "call_1":
                return pt.AfterToolCallResult(content=[pt.TextContent("overridden")], is_error=True)
            if ctx.tool_call.id == "call_2":
                return pt.AfterToolCallResult(details={"replaced": True})
            return None

        hooks["after_tool_call"] = after
    elif name == "O10b":

        async def failing_after(ctx: pt.AfterToolCallContext) -> None:
            raise Exception("after hook failed")

        hooks["after_tool_call"] = failing_after
    elif name == "O22":

        async def transform(messages: Sequence[pt.AgentMessage]) -> list[pt.AgentMessage]:
            return list(messages)[-2:]

        async def convert(messages: Sequence[pt.AgentMessage]) -> list[pt.Message]:
            return [m for m in messages if m.role != "notification"]  # type: ignore[misc]

        hooks["transform_context"] = transform
        hooks["convert_to_llm"] = convert
    return hooks


def initial_messages(data: dict[str, Any]) -> list[pt.AgentMessage]:
    return [pt.from_json(m, pt.AgentMessage) for m in data["initialMessages"]]


def prompt_messages(name: str) -> list[pt.AgentMessage]:
    if name == "O22":
        data = load(name)
        # the prompt is the last two messages of the final transcript's first run
        return [pt.from_json(m, pt.AgentMessage) for m in data["finalMessages"][2:4]]
    return [pt.UserMessage([pt.TextContent("go")])]
