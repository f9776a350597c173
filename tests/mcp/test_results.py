"""An MCP call's result as a ``pt.ToolResult``: an ``isError`` result's message is its text, or
its structured content when it has no text."""

from __future__ import annotations

import mcp_types as types
import pytest

import pi_trio as pt
from pi_trio.mcp._results import to_tool_result


def test_an_error_said_in_structured_content_only_is_the_message() -> None:
    result = types.CallToolResult(content=[], structured_content={"error": "quota"}, is_error=True)
    with pytest.raises(pt.mcp.McpToolError) as caught:
        to_tool_result(result)
    assert str(caught.value) == '{"error": "quota"}'


def test_an_error_with_nothing_to_say_says_so() -> None:
    with pytest.raises(pt.mcp.McpToolError, match="reported an error without a message"):
        to_tool_result(types.CallToolResult(content=[], is_error=True))


def test_text_comes_before_structured_content_in_an_error() -> None:
    text = types.TextContent(type="text", text="no such file")
    result = types.CallToolResult(content=[text], structured_content={"code": 2}, is_error=True)
    with pytest.raises(pt.mcp.McpToolError) as caught:
        to_tool_result(result)
    assert str(caught.value) == "no such file"
