"""What a ``@tool`` function's return value becomes: content blocks are the result's content,
not the JSON of their attributes (a TextContent's internals are private)."""

from __future__ import annotations

from typing import Any

import pytest

import pi_trio as pt
from pi_trio.tools import tool

from .support import calls, faux, make_agent


async def _run(t: pt.AgentTool, raw: dict[str, Any]) -> pt.ToolResult:
    return await t.run("call_1", t.validate(raw), lambda partial: None)


async def test_a_text_block_returned_is_the_content() -> None:
    block = pt.TextContent("streamed")
    block.append(" in pieces")  # a piece list is set: its attributes are not the text

    @tool
    async def say() -> pt.TextContent:
        """Say it."""
        return block

    result = await _run(say, {})
    assert result.content == [pt.TextContent("streamed in pieces")]
    assert result.details is None


async def test_a_list_of_blocks_returned_is_the_content() -> None:
    image = pt.ImageContent("aGk=", "image/png")

    @tool
    def show() -> list[pt.TextContent | pt.ImageContent]:
        """Show it."""
        return [pt.TextContent("a picture:"), image]

    result = await _run(show, {})
    assert result.content == [pt.TextContent("a picture:"), image]


async def test_other_values_are_still_json_with_the_value_in_details() -> None:
    @tool
    def numbers() -> list[int]:
        """Count."""
        return [1, 2, 3]

    @tool
    def nothing() -> list[int]:
        """Nothing."""
        return []

    result = await _run(numbers, {})
    assert result.content == [pt.TextContent("[1, 2, 3]")] and result.details == [1, 2, 3]
    assert (await _run(nothing, {})).content == [pt.TextContent("[]")]


@pytest.mark.parametrize(
    "value",
    [
        pt.ThinkingContent("a private thought"),
        pt.ToolCall("call_9", "echo", {}),
        [pt.TextContent("a"), pt.ThinkingContent("b")],
        [pt.TextContent("a"), "b"],
        (pt.ImageContent("aGk=", "image/png"), 3),
    ],
    ids=["thinking", "tool_call", "text_and_thinking", "text_and_str", "image_and_int"],
)
async def test_a_block_that_is_not_tool_result_content_is_a_clear_error(value: Any) -> None:
    """Only text and image blocks are a tool result's content: a ThinkingContent or a ToolCall
    returned (alone, or in a list mixing blocks with anything else) fails the tool with an error
    that says what a tool returns, never the JSON of the block's private slots."""

    @pt.tool
    def give() -> Any:
        """Give."""
        return value

    agent = make_agent([calls(("give", {})), faux.assistant_message("done")], [give])
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert isinstance(result, pt.ToolResultMessage) and result.is_error
    [block] = result.content
    assert isinstance(block, pt.TextContent)
    assert "_text" not in block.text and "TextContent(" not in block.text
    assert "TextContent and ImageContent" in block.text
