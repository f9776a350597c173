"""The messages pi's coding agent keeps in a session's context, beside pi's own three.

pi-coding-agent (1.6) puts four more roles into the transcript it sends through its
``convertToLlm``: a ``compactionSummary`` (what the messages before a compaction said), a
``branchSummary`` (what a branch the conversation left said), a ``custom`` message an extension
injected, and a ``bashExecution`` (a shell command the user ran with ``!``). pi_trio reads and
writes them as pi's JSON (keys they do not model kept in ``extra``, as pi's own messages do;
every :class:`pi_trio.wire.WireConverter` knows them from the start), and the agent's default
``convert_to_llm`` shows them to
the model as pi does: each becomes a user message (a summary wrapped in a short note saying what
it is; a ``bashExecution`` marked ``exclude_from_context`` is not shown).

This module imports neither cattrs nor the wire converter (``import pi_trio`` stays light): the
converter registers :data:`CODING_MESSAGE_TYPES` when it is made, leaving out the fields in
:data:`OMITTED_WHILE_NONE` while they are None, as pi does.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal, final

import attrs

from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextContent,
    ToolResultMessage,
    UserContent,
    UserMessage,
    kept_field,
    now_ms,
)

__all__ = [
    "CODING_MESSAGE_TYPES",
    "OMITTED_WHILE_NONE",
    "BashExecutionMessage",
    "BranchSummary",
    "CompactionSummary",
    "ExtensionMessage",
    "as_llm_message",
]


@final
@attrs.define(weakref_slot=False)
class CompactionSummary:
    """What the messages before a compaction said: the model sees it in their place.

    ``tokens_before`` is the size of the context that was compacted (pi's ``tokensBefore``).
    """

    role: ClassVar[Literal["compactionSummary"]] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int = attrs.field(factory=now_ms)
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class BranchSummary:
    """What a branch of the conversation said before the conversation came back from it
    (``from_id``: the id of the entry it came back from, in pi's session file)."""

    role: ClassVar[Literal["branchSummary"]] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int = attrs.field(factory=now_ms)
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class ExtensionMessage:
    """A message an extension of pi's coding agent injected (pi's role ``custom``): the model
    sees ``content`` as a user message; ``display`` says whether pi's UI shows it;
    ``details`` is the extension's own data (never sent to the model)."""

    role: ClassVar[Literal["custom"]] = "custom"
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int = attrs.field(factory=now_ms)
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class BashExecutionMessage:
    """A shell command the user ran in pi's coding agent (``!cmd``) and what it printed; one
    run with ``!!`` has ``exclude_from_context`` set and the model never sees it."""

    role: ClassVar[Literal["bashExecution"]] = "bashExecution"
    command: str
    output: str
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    timestamp: int = attrs.field(factory=now_ms)
    exclude_from_context: bool | None = None
    extra: dict[str, Any] | None = kept_field()


CODING_MESSAGE_TYPES: Final = (
    CompactionSummary,
    BranchSummary,
    ExtensionMessage,
    BashExecutionMessage,
)
"""The message classes of this module."""

OMITTED_WHILE_NONE: Final[dict[type[Any], frozenset[str]]] = {
    ExtensionMessage: frozenset({"details"}),
    BashExecutionMessage: frozenset({"exit_code", "full_output_path", "exclude_from_context"}),
}
"""The fields pi leaves out of a message's JSON while they are unset (None), per class."""


_LLM_TYPES: Final = (UserMessage, AssistantMessage, ToolResultMessage, SystemMessage)


def _wrapped(note: str, summary: str) -> str:
    return f"{note}\n\n<summary>\n{summary}\n</summary>"


def _bash_text(message: BashExecutionMessage) -> str:
    lines = [f"The user ran the shell command `{message.command}`."]
    lines.append(
        f"Its output:\n```\n{message.output}\n```" if message.output else "It printed nothing."
    )
    if message.cancelled:
        lines.append("The command was cancelled.")
    elif message.exit_code:
        lines.append(f"It exited with status {message.exit_code}.")
    if message.truncated and message.full_output_path:
        lines.append(f"The output above is cut short; all of it is in {message.full_output_path}.")
    return "\n\n".join(lines)


def as_llm_message(message: Any) -> Message | None:
    """What the model sees of ``message`` by default: pi's own messages as they are, this
    module's as a user message (at the same timestamp), anything else not at all (None)."""
    if isinstance(message, _LLM_TYPES):
        return message
    text: str
    if isinstance(message, CompactionSummary):
        text = _wrapped(
            "This conversation was compacted: what came before this point is summarised below.",
            message.summary,
        )
    elif isinstance(message, BranchSummary):
        text = _wrapped(
            "This conversation came back from another branch, which is summarised below.",
            message.summary,
        )
    elif isinstance(message, ExtensionMessage):
        content = message.content
        blocks: list[UserContent] = (
            [TextContent(content)] if isinstance(content, str) else list(content)
        )
        return UserMessage(blocks, timestamp=message.timestamp)
    elif isinstance(message, BashExecutionMessage):
        if message.exclude_from_context:
            return None
        text = _bash_text(message)
    else:
        return None
    return UserMessage([TextContent(text)], timestamp=message.timestamp)
