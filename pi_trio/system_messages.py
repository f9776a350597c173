"""pi-ai 1.6's system messages, replayed: the prompt and tools a transcript describes.

A transcript may carry :class:`pi_trio.SystemMessage` records (pi >= 0.86 puts one at the head
of every transcript; later ones change the prompt and the tools). None of pi_trio's wire APIs
takes a system message in the middle of a conversation, so before a request is built the
transcript is collapsed the way pi-ai 1.6 collapses it for such APIs: every system message is
replayed into one system prompt and one tool list, and the system messages leave the message
list. The request's own ``system_prompt`` and ``tools`` (an Agent's settings) come first, as
the leading system message pi's ``normalizeContext`` makes of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from .messages import Context, Message, SystemMessage, Tool

__all__ = ["collapse_system_messages", "current_system"]


def current_system(
    messages: Iterable[object],
    system_prompt: str | None = None,
    tools: Sequence[Tool] = (),
) -> tuple[str, tuple[Tool, ...]]:
    """The system prompt and tools after replaying every system message of ``messages``.

    ``system_prompt`` and ``tools`` are the starting point (a leading system message of their
    own). Each system message's text is appended to the prompt (paragraphs joined by a blank
    line); its ``sections`` patch named parts, rendered after the prompt in the order they were
    first set (a None value removes one); ``tools_removed`` withdraws tools by name and
    ``tools_added`` declares tools (replacing one of the same name).

    Args:
        messages: a transcript; messages other than system messages are skipped.
        system_prompt: the prompt before the first system message.
        tools: the tools before the first system message.
    """
    texts = [system_prompt] if system_prompt else []
    sections: dict[str, str] = {}
    current = {tool.name: tool for tool in tools}
    for message in messages:
        if type(message) is not SystemMessage:
            continue
        text = message.text
        if text:
            texts.append(text)
        for name, value in (message.sections or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for removed in message.tools_removed:
            current.pop(removed, None)
        for tool in message.tools_added:
            current[tool.name] = tool
    parts = [*texts, *(text for text in sections.values() if text)]
    return "\n\n".join(parts), tuple(current.values())


def collapse_system_messages(context: Context) -> Context:
    """``context`` as an API without mid-conversation system messages takes it: the prompt and
    tools its system messages describe (after its own ``system_prompt`` and ``tools``), and the
    other messages. The same ``context`` when it holds no system message."""
    messages = context.messages
    if not any(type(message) is SystemMessage for message in messages):
        return context
    prompt, tools = current_system(messages, context.system_prompt, context.tools)
    rest: list[Message] = [m for m in messages if type(m) is not SystemMessage]
    return attrs.evolve(context, system_prompt=prompt or None, messages=rest, tools=list(tools))
