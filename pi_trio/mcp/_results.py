"""MCP ``CallToolResult`` -> :class:`pt.ToolResult`, and progress -> a partial result.

No I/O here. Text and image blocks map one to one; blocks pi_trio has no type for (audio,
resource links, embedded resources) become a short text line so the model still learns of them;
``structuredContent`` goes to ``details["structured_content"]``. A result with ``isError`` is
not a result: :func:`to_tool_result` raises :class:`McpToolError` with the server's own text, and
the loop turns that into an error tool result (every exception from ``execute`` does).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from .._errors import PiError
from ..events import ToolResult
from ..messages import ImageContent, TextContent

__all__ = ["McpToolError", "progress_result", "to_tool_result"]

Content = TextContent | ImageContent


class McpToolError(PiError):
    """A tool call the server answered with ``isError``: the message is the server's text."""


def _block(block: Any) -> Content:
    if isinstance(block, types.TextContent):
        return TextContent(block.text)
    if isinstance(block, types.ImageContent):
        return ImageContent(block.data, block.mime_type)
    if isinstance(block, types.AudioContent):
        return TextContent(f"[audio {block.mime_type}, {len(block.data)} base64 characters]")
    if isinstance(block, types.ResourceLink):
        return TextContent(f"[resource link {block.name}: {block.uri}]")
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return TextContent(resource.text)
        mime = resource.mime_type or "application/octet-stream"
        if mime.startswith("image/") and isinstance(resource, types.BlobResourceContents):
            return ImageContent(resource.blob, mime)
        return TextContent(f"[resource {resource.uri}: {mime}]")
    return TextContent(f"[{getattr(block, 'type', type(block).__name__)} content]")


def to_tool_result(result: types.CallToolResult) -> ToolResult:
    """The ToolResult for a successful call.

    Raises:
        McpToolError: the server flagged the result ``isError``; its text is the message.
    """
    content = [_block(block) for block in result.content]
    structured = result.structured_content
    if result.is_error:
        text = "\n".join(block.text for block in content if isinstance(block, TextContent))
        if not text and structured is not None:  # the error said in structured content only
            text = json.dumps(structured, ensure_ascii=False)
        raise McpToolError(text or "the tool reported an error without a message")
    if not content and structured is not None:
        content = [TextContent(json.dumps(structured, ensure_ascii=False))]
    details = None if structured is None else {"structured_content": structured}
    return ToolResult(content, details=details)


def progress_result(progress: float, total: float | None, message: str | None) -> ToolResult:
    """A ``notifications/progress`` as the partial result ``on_update`` streams."""
    amount = f"{progress:g}" if total is None else f"{progress:g}/{total:g}"
    text = f"{message} ({amount})" if message else amount
    details = {"progress": progress, "total": total, "message": message}
    return ToolResult([TextContent(text)], details=details)
