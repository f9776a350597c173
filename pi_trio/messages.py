"""Messages and content blocks: pi's data model as attrs classes.

The shapes follow pi-ai 0.73.1 (``types.d.ts``) with snake_case attribute names, plus what pi-ai
1.6 added (:class:`SystemMessage`, the stop reasons "pending" and "deferred", and the optional
fields of assistant messages, tool calls and tool results); ``pi_trio.wire`` turns them into pi's
camelCase JSON and back. What pi's JSON carries that these classes do not model (a newer pi's
field) is kept in each record's ``extra`` and written back unchanged.

Messages are mutable on purpose: the streaming assistant message at the tail of a transcript is
filled in place, one delta at a time.

Text accumulation is amortised O(1) per delta: :class:`TextContent` and :class:`ThinkingContent`
keep the streamed pieces in a list and join them only when ``text``/``thinking`` is read; a block
that is not being streamed into holds just its string.

The record classes are ``@final`` (the wire format knows exactly these); an application's own
message type is any class with a ``role`` (:class:`CustomMessage`), not a subclass of them.

Messages, content blocks and usage records have no ``__weakref__`` slot (like a dataclass
with ``slots=True``): a transcript is most of what a running agent holds, and a slot on
each of its objects adds up over thousands of agents.
``weakref.ref(message)`` raises ``TypeError``: hold messages in a list or dict instead (an
``id()`` key only while the message itself is held too: a freed object's id is reused).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import (
    Any,
    ClassVar,
    Literal,
    Protocol,
    TypeAlias,
    cast,
    final,
    runtime_checkable,
)

import attrs

from ._accumulating import Accumulating, streamed
from ._checks import describe

__all__ = [
    "AgentMessage",
    "AssistantContent",
    "AssistantMessage",
    "Context",
    "CustomMessage",
    "ImageContent",
    "Message",
    "StopReason",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "Tool",
    "ToolCall",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UsageCost",
    "UserContent",
    "UserMessage",
    "checked_message",
    "now_ms",
]

StopReason: TypeAlias = Literal[
    "stop", "length", "toolUse", "error", "aborted", "pending", "deferred"
]
"""pi's stop reasons; "pending" and "deferred" are pi-ai 1.6's (a response still being made, one
the provider finishes later), read and written as they are."""

NOT_ON_WIRE: dict[str, object] = {"pi_trio.wire": False}
"""Field metadata: pi_trio's own additions that pi's JSON does not carry (``pt.to_json`` leaves
them out; ``pt.from_json`` leaves them at their default)."""

KEPT: dict[str, object] = {"pi_trio.wire": "extra"}
"""Field metadata of ``extra``: the keys of pi's JSON the class does not model, as read."""


def kept_field() -> Any:
    """``extra``: what pi's JSON of this record held that the class does not model (a newer
    pi's field), kept as read and written back unchanged by ``pt.to_json``; None when nothing
    was. Compared by ``==``, never hashed, not shown in ``repr``."""
    return attrs.field(default=None, kw_only=True, repr=False, hash=False, metadata=KEPT)


_last_ms = [0]


def now_ms() -> int:
    """Wall-clock time in milliseconds since the epoch (pi's ``Date.now()``).

    Messages made in the same millisecond share one ``int`` object: thousands of agents hold
    fewer of them.
    """
    ms = time.time_ns() // 1_000_000
    last = _last_ms[0]
    if ms == last:
        return last
    _last_ms[0] = ms
    return ms


@final
@attrs.define(init=False, eq=False, repr=False, weakref_slot=False, getstate_setstate=False)
class TextContent(Accumulating):
    """A text block. ``text`` may be streamed into with :meth:`append`."""

    type: ClassVar[Literal["text"]] = "text"
    # the optional fields' defaults are __init__'s, for tools that read attrs.fields (cattrs);
    # the string has none there, so a union of blocks tells them apart by it
    text: str
    text_signature: str | None = None
    extra: dict[str, Any] | None = attrs.field(default=None, repr=False, metadata=KEPT)

    def __init__(
        self,
        text: str = "",
        text_signature: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._start(text)
        self.text_signature = text_signature
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TextContent):
            return NotImplemented
        return (
            self.text == other.text
            and self.text_signature == other.text_signature
            and self.extra == other.extra
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = f", text_signature={self.text_signature!r}" if self.text_signature else ""
        return f"TextContent(text={self.text!r}{extra})"


streamed(TextContent, "text")


@final
@attrs.define(init=False, eq=False, repr=False, weakref_slot=False, getstate_setstate=False)
class ThinkingContent(Accumulating):
    """A reasoning block. ``thinking`` may be streamed into with :meth:`append`."""

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str  # no default in attrs.fields, as TextContent's text
    thinking_signature: str | None = None
    redacted: bool = False
    extra: dict[str, Any] | None = attrs.field(default=None, repr=False, metadata=KEPT)

    def __init__(
        self,
        thinking: str = "",
        thinking_signature: str | None = None,
        redacted: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._start(thinking)
        self.thinking_signature = thinking_signature
        self.redacted = redacted
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ThinkingContent):
            return NotImplemented
        return (
            self.thinking == other.thinking
            and self.thinking_signature == other.thinking_signature
            and self.redacted == other.redacted
            and self.extra == other.extra
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ThinkingContent(thinking={self.thinking!r}, "
            f"thinking_signature={self.thinking_signature!r}, redacted={self.redacted!r})"
        )


streamed(ThinkingContent, "thinking")


@final
@attrs.define(weakref_slot=False)
class ImageContent:
    """An image, base64-encoded."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class ToolCall:
    """A tool call requested by the model. ``arguments`` is the parsed JSON object.

    ``namespace`` and ``arguments_error`` are pi-ai 1.6's (a namespaced tool's namespace; why
    the arguments could not be parsed), carried as read.
    """

    type: ClassVar[Literal["toolCall"]] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    thought_signature: str | None = None
    namespace: str | None = None
    arguments_error: str | None = None
    extra: dict[str, Any] | None = kept_field()


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
ToolResultContent: TypeAlias = TextContent | ImageContent


@final
@attrs.define(weakref_slot=False)
class UsageCost:
    """Cost in dollars of one response, split like pi's ``usage.cost``."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class Usage:
    """Token counts of one response and their cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: UsageCost = attrs.field(factory=UsageCost)
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class UserMessage:
    """A message from the user: a string or a list of text and image blocks."""

    role: ClassVar[Literal["user"]] = "user"
    content: str | list[UserContent]
    timestamp: int = attrs.field(factory=now_ms)
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class AssistantMessage:
    """A model response. ``stop_reason`` uses pi's strings; failures carry ``error_message``.

    The fields after ``response_model`` are pi-ai 1.6's, None unless read from its JSON (or set
    by a stream function): ``duration_ms`` (how long the response took), ``thinking_level`` and
    ``provider_thinking_level`` (the level asked for, and the provider's own name for it),
    ``raw_stop_reason`` (the provider's stop reason as sent), ``end_turn``, ``diagnostics`` (a
    list of JSON objects) and ``deferred`` (the handle of a "deferred" response, a JSON object).
    """

    role: ClassVar[Literal["assistant"]] = "assistant"
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = attrs.field(factory=now_ms)
    response_id: str | None = None
    response_model: str | None = None
    duration_ms: float | None = None
    thinking_level: str | None = None
    provider_thinking_level: str | None = None
    raw_stop_reason: str | None = None
    end_turn: bool | None = None
    diagnostics: Any = None
    deferred: Any = None
    extra: dict[str, Any] | None = kept_field()

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls of this message, in source order."""
        return [block for block in self.content if isinstance(block, ToolCall)]


@final
@attrs.define(weakref_slot=False)
class ToolResultMessage:
    """The result of one tool call, as the model will see it.

    ``usage`` (what the tool itself spent on models, e.g. a sub-agent), ``nested_calls`` (pi's
    record of the calls it made, a JSON object) and ``duration_ms`` are pi-ai 1.6's; None
    unless set or read.
    """

    role: ClassVar[Literal["toolResult"]] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent]
    details: Any = None
    is_error: bool = False
    timestamp: int = attrs.field(factory=now_ms)
    usage: Usage | None = None
    nested_calls: Any = None
    duration_ms: float | None = None
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define(weakref_slot=False)
class SystemMessage:
    """pi-ai 1.6's system message: the system prompt, and changes to it and to the tools.

    The leading one of a transcript is the system prompt; a later one changes it: its
    ``content`` is appended to the prompt, ``sections`` patch named parts (a None value removes
    the section), ``tools_added`` declare tools (replacing one of the same name) and
    ``tools_removed`` (names) withdraw them. Replaying every system message in order gives the
    current prompt and tools (:func:`pi_trio.current_system`); a request carries them as its
    system prompt and tools, since none of pi_trio's wire APIs takes system messages
    mid-conversation (pi-ai 1.6 does the same for such APIs).
    """

    role: ClassVar[Literal["system"]] = "system"
    content: str | list[TextContent]
    sections: dict[str, str | None] | None = None
    tools_added: Sequence[Tool] = ()
    tools_removed: Sequence[str] = ()
    timestamp: int = attrs.field(factory=now_ms)
    extra: dict[str, Any] | None = kept_field()

    @property
    def text(self) -> str:
        """``content`` as one string (text blocks joined without a separator, as pi does)."""
        content = self.content
        return content if isinstance(content, str) else "".join(b.text for b in content)


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | SystemMessage


@runtime_checkable
class CustomMessage(Protocol):
    """An application's own message type: anything with a ``role``.

    Custom messages stay in the transcript and get message_start/end events; the agent's
    ``convert_to_llm`` decides what, if anything, the model sees of them. Register the class
    with :func:`pi_trio.wire.register_message_type` to (de)serialise it.
    """

    @property
    def role(self) -> str: ...


AgentMessage: TypeAlias = Message | CustomMessage


@final
@attrs.define(frozen=True)
class Tool:
    """A tool as a provider sees it: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    extra: dict[str, Any] | None = kept_field()


@final
@attrs.define
class Context:
    """What one model request is built from."""

    system_prompt: str | None = None
    messages: Sequence[Message] = attrs.field(factory=list)
    tools: Sequence[Tool] = attrs.field(factory=list)


_PI_MESSAGES = (UserMessage, AssistantMessage, ToolResultMessage, SystemMessage)
_NOT_MESSAGES = (str, bytes, int, float, type(None), dict, list, tuple, set, frozenset)


def checked_message(value: object, name: str = "message") -> AgentMessage:
    """``value``, when it can stand in a transcript: pi's user, assistant or tool-result
    message, or an application's own (an object whose ``role`` is a str: :class:`CustomMessage`).

    Raises:
        TypeError: anything else (a str, a dict of JSON, None, ...), naming ``name``, what it
            got and what it takes; nothing was changed.
    """
    if isinstance(value, _PI_MESSAGES):
        return value
    if not isinstance(value, _NOT_MESSAGES) and isinstance(getattr(value, "role", None), str):
        return cast(AgentMessage, value)
    hint = ""
    if isinstance(value, dict):
        hint = " (pi's JSON of a message? pt.from_json(data, pt.AgentMessage) reads it)"
    elif isinstance(value, str):
        hint = " (a text becomes a message with pt.UserMessage(text))"
    raise TypeError(
        f"{name} must be a message (pt.UserMessage, pt.AssistantMessage, pt.ToolResultMessage, "
        "pt.SystemMessage, "
        f"or your own class with a str role), got {describe(value)}{hint}"
    )
