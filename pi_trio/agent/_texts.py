"""The Agent's error texts (pi's, where pi has one) and the text-to-message rule."""

from __future__ import annotations

from ..messages import AgentMessage, TextContent, UserMessage

__all__ = [
    "BUSY_CONTINUE",
    "BUSY_PROMPT",
    "CONTINUE_FROM_ASSISTANT",
    "NOTHING_TO_CONTINUE",
    "NO_MODEL",
    "as_message",
]

BUSY_PROMPT = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE = "Agent is already processing. Wait for completion before continuing."
NOTHING_TO_CONTINUE = "No messages to continue from"
CONTINUE_FROM_ASSISTANT = "Cannot continue from message role: assistant"
NO_MODEL = (
    "the agent has no model: create it with pt.Agent(pt.AgentState(model=pt.get_model("
    "'anthropic', 'claude-sonnet-4-5'))), or set agent.state.model, before prompting"
)


def as_message(message: AgentMessage | str) -> AgentMessage:
    """A plain string becomes a user message with that text."""
    if isinstance(message, str):
        return UserMessage([TextContent(message)])
    return message
