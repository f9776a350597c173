"""A hostile review of six small fixes (c0d73a8 .. d6fb619): content blocks returned by an
``@tool``. Each test names the defect it pins (tests/test_review_fixes.py is an earlier
review's)."""

from __future__ import annotations

from typing import Any

import pytest

import pi_trio as pt
from tests.support import calls, faux, make_agent

# --- @tool: only text and image blocks are a tool result's content ----------------------------


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
    """A ThinkingContent (or ToolCall) returned went to the model as the JSON of its private
    slots (``{"_text": ..., "_parts": ...}``: stale text while pieces were pending), and a list
    mixing blocks with anything else as the ``repr`` of each block: now the tool fails with an
    error that says what a tool returns."""

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
