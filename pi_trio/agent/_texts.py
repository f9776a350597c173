"""The Agent's error texts (pi's, where pi has one) and the text-to-message rule."""

from __future__ import annotations

from collections.abc import Sequence

from .._checks import describe
from ..messages import AgentMessage, ImageContent, TextContent, UserMessage, checked_message

__all__ = [
    "BUSY_COMPACT",
    "BUSY_CONTINUE",
    "BUSY_PROMPT",
    "CONTINUE_FROM_ASSISTANT",
    "NOTHING_TO_CONTINUE",
    "NO_MODEL",
    "as_message",
    "prompt_messages",
]

BUSY_PROMPT = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE = "Agent is already processing. Wait for completion before continuing."
BUSY_COMPACT = (
    "Agent is busy: compact() runs between runs (abort() or wait_for_idle() first); a run "
    "with compaction set compacts by itself when it must"
)
NOTHING_TO_CONTINUE = "No messages to continue from"
CONTINUE_FROM_ASSISTANT = "Cannot continue from message role: assistant"
NO_MODEL = (
    "the agent has no model: create it with pt.Agent(pt.AgentState(model=pt.get_model("
    "'anthropic', 'claude-sonnet-4-5'))), or set agent.state.model, before prompting"
)


def as_message(message: AgentMessage | str, name: str = "message") -> AgentMessage:
    """A plain string becomes a user message with that text; a message is checked.

    Raises:
        TypeError: neither a str nor a message (``name`` says where it was given).
    """
    if isinstance(message, str):
        return UserMessage([TextContent(message)])
    return checked_message(message, name)


def prompt_messages(
    input: str | AgentMessage | Sequence[AgentMessage],
    images: Sequence[ImageContent] | None,
) -> list[AgentMessage]:
    """What ``prompt(input, images)`` adds to the transcript.

    Raises:
        TypeError: ``input`` is not a text, a message or a list of messages, or an image is
            not a ``pt.ImageContent``.
        ValueError: ``images`` with a message instead of a text.
    """
    if isinstance(input, str):
        content: list[TextContent | ImageContent] = [TextContent(input)]
        for i, image in enumerate(images or ()):
            if not isinstance(image, ImageContent):
                raise TypeError(
                    f"images[{i}] must be a pt.ImageContent(data, mime_type), got {describe(image)}"
                )
            content.append(image)
        return [UserMessage(content)]
    if images:
        raise ValueError("images= goes with a text prompt; put them in your message")
    if isinstance(input, list | tuple):
        return [checked_message(item, f"prompt[{i}]") for i, item in enumerate(input)]
    if input is None or isinstance(input, int | float | dict | bytes):
        raise TypeError(
            f"prompt() takes a text, a message or a list of messages, got {describe(input)}"
            + (
                " (pi's JSON? pt.from_json(data, pt.AgentMessage))"
                if isinstance(input, dict)
                else ""
            )
        )
    return [checked_message(input, "prompt")]
