"""Make a transcript sendable to one particular model (pi-ai's ``transformMessages``).

A transcript may mix models and providers, hold failed turns, or end with tool
calls that never got results. Before a wire API turns it into a request body,
:func:`transform_messages` produces a copy (the caller's messages are never
modified) where:

* images become a text placeholder when the model takes text only;
* assistant messages that failed (stop_reason "error"/"aborted") are dropped:
  they are incomplete turns and providers reject replays of them;
* thinking from another model becomes plain text (or disappears when empty
  or redacted), since signatures only make sense to the model that made them;
  thinking from the same model is kept with its signature;
* tool call ids are rewritten by the wire API's ``normalize_id`` (different
  providers accept different id alphabets and lengths) and tool results follow
  the rewrite;
* a tool call without a result gets a synthetic error result ("No result
  provided"), placed before the next user or assistant message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from ..messages import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultContent,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..models import Model

__all__ = ["IdNormalizer", "is_same_model", "transform_messages"]

USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
NO_RESULT_TEXT = "No result provided"

IdNormalizer = Callable[[str, AssistantMessage], str]
"""``normalize_id(tool_call_id, source_message) -> id the target API accepts``."""


def is_same_model(message: AssistantMessage, model: Model) -> bool:
    """Whether ``message`` was produced by exactly ``model`` (same provider, API and id)."""
    return (
        message.provider == model.provider
        and message.api == model.api
        and message.model == model.id
    )


def _without_images(
    content: Sequence[UserContent | ToolResultContent], placeholder: str
) -> list[TextContent | ImageContent]:
    out: list[TextContent | ImageContent] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not previous_was_placeholder:
                out.append(TextContent(placeholder))
            previous_was_placeholder = True
            continue
        out.append(block)
        previous_was_placeholder = block.text == placeholder
    return out


def _assistant_content(
    message: AssistantMessage,
    model: Model,
    normalize_id: IdNormalizer | None,
    id_map: dict[str, str],
) -> list[AssistantContent]:
    same = is_same_model(message, model)
    out: list[AssistantContent] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.redacted:
                if same:
                    out.append(block)
            elif same and block.thinking_signature:
                out.append(block)
            elif not block.thinking.strip():
                continue
            elif same:
                out.append(block)
            else:
                out.append(TextContent(block.thinking))
        elif isinstance(block, TextContent):
            out.append(block if same else TextContent(block.text))
        else:
            call = block
            if not same and call.thought_signature:
                call = attrs.evolve(call, thought_signature=None)
            if not same and normalize_id is not None:
                new_id = normalize_id(call.id, message)
                if new_id != call.id:
                    id_map[call.id] = new_id
                    call = attrs.evolve(call, id=new_id)
            out.append(call)
    return out


def transform_messages(
    messages: Sequence[Message], model: Model, normalize_id: IdNormalizer | None = None
) -> list[Message]:
    """A copy of ``messages`` that ``model``'s wire API can send (see the module doc)."""
    text_only = "image" not in model.input
    id_map: dict[str, str] = {}
    result: list[Message] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def flush_orphans() -> None:
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(NO_RESULT_TEXT)],
                        is_error=True,
                    )
                )
        pending.clear()
        answered.clear()

    for message in messages:
        if isinstance(message, UserMessage):
            flush_orphans()
            if text_only and not isinstance(message.content, str):
                user_content = _without_images(message.content, USER_IMAGE_PLACEHOLDER)
                message = attrs.evolve(message, content=user_content)
            result.append(message)
        elif isinstance(message, ToolResultMessage):
            new_id = id_map.get(message.tool_call_id)
            changes: dict[str, object] = {}
            if new_id is not None and new_id != message.tool_call_id:
                changes["tool_call_id"] = new_id
            if text_only and any(isinstance(b, ImageContent) for b in message.content):
                changes["content"] = _without_images(message.content, TOOL_IMAGE_PLACEHOLDER)
            if changes:
                message = attrs.evolve(message, **changes)  # type: ignore[arg-type]
            answered.add(message.tool_call_id)
            result.append(message)
        elif isinstance(message, AssistantMessage):
            flush_orphans()
            if message.stop_reason in ("error", "aborted"):
                continue
            content = _assistant_content(message, model, normalize_id, id_map)
            message = attrs.evolve(message, content=content)
            pending.extend(b for b in content if isinstance(b, ToolCall))
            result.append(message)
        else:  # pragma: no cover - Message is a closed union
            result.append(message)
    flush_orphans()
    return result
