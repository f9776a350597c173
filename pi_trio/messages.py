"""Messages and content blocks: pi's data model as attrs classes.

The shapes follow pi-ai 0.73.1 (``types.d.ts``) with snake_case attribute names; ``pi_trio.wire``
turns them into pi's camelCase JSON and back. Messages are mutable on purpose: the streaming
assistant message at the tail of a transcript is filled in place, one delta at a time.

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

import sys
import time
import types
from collections.abc import Callable, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Literal,
    Protocol,
    Self,
    TypeAlias,
    cast,
    final,
    runtime_checkable,
)

import attrs

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

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]


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


def _no_refcount(obj: object) -> int:
    return 1 << 30  # an interpreter without refcounts: a piece list is never dropped


_getrefcount: Callable[[object], int] = getattr(sys, "getrefcount", _no_refcount)


class _Accumulating:
    """A string built from streamed pieces; joining happens lazily, on read.

    The string is stored in the slot of the subclass's public field (``text``/``thinking``),
    reached under the name ``_text`` (:func:`_streamed` swaps the field's name for a property).
    While ``_parts`` is None the string is the text; once a piece is added, the text is
    ``"".join(_parts)`` (``_parts[0]`` being the text so far). Reading joins the pieces and,
    when no :meth:`appender` still refers to the list, drops it: a finished block holds one
    string, not a list of one.
    """

    # the string's slot is the subclass's field's; mypy is told of it as one of ours
    __slots__ = ("_parts", "_text") if TYPE_CHECKING else ("_parts",)
    _text: str
    _parts: list[str] | None

    def _start(self, text: str) -> None:
        """The block holds ``text`` and no piece list (its ``__init__`` calls this first)."""
        self._text = text
        self._parts = None

    def _get(self) -> str:
        parts = self._parts
        if parts is None:
            return self._text
        try:
            joined = "".join(parts) if len(parts) != 1 else parts[0]
        except TypeError:  # an appender() was given something else than a str
            bad = next(piece for piece in parts if not isinstance(piece, str))
            raise TypeError(
                f"a piece streamed into this {type(self).__name__} is a "
                f"{type(bad).__name__}, not a str: {bad!r}; appender() takes str pieces"
            ) from None
        del parts  # a reference of ours would count as an appender's
        self._keep(joined)
        return joined

    def _set(self, value: str) -> None:
        if self._parts is not None:
            self._keep(value)
        self._text = value

    def _keep(self, text: str) -> None:
        """Make ``text`` the block's whole text, a piece list being set: the list goes when
        nothing else refers to it, else it keeps ``text`` as its one piece."""
        if _getrefcount(self._parts) == _UNLENT:  # only the block refers to its list
            self._parts = None
        else:
            self._parts[:] = [text]  # type: ignore[index]  # an appender() holds the list
        self._text = text

    def append(self, delta: str) -> None:
        """Add a streamed piece: O(1), the join happens on the next read.

        Args:
            delta: the text to add at the end.

        Raises:
            TypeError: ``delta`` is not a str (the block is left as it was).
        """
        if not isinstance(delta, str):
            raise TypeError(
                f"{type(self).__name__}.append() takes a str, not {type(delta).__name__}: {delta!r}"
            )
        parts = self._parts
        if parts is None:
            self._parts = [self._text, delta]
        else:
            parts.append(delta)

    def appender(self) -> Callable[[str], None]:
        """A callable that adds one streamed piece, like :meth:`append` but without a
        Python call per piece (it is the bound ``append`` of the block's piece list): for
        a loop that streams many deltas into one block. It stays valid for the life of the
        block: reading or assigning the text keeps the list while an appender refers to it
        (let go of the appender once done streaming, and the next read frees the list)."""
        parts = self._parts
        if parts is None:
            parts = self._parts = [self._text]
        return parts.append

    def __copy__(self) -> Self:
        """A snapshot (``copy.copy``): the text so far and the other fields, no piece list
        (sharing it, the copy would grow with the stream and an edit of the copy would
        rewrite this block)."""
        clone = object.__new__(type(self))
        clone._parts = None
        for field in attrs.fields(type(self)):  # type: ignore[arg-type]  # attrs subclasses
            setattr(clone, field.name, getattr(self, field.name))
        return clone

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:
        """Pickled and deep-copied by its fields (the text joined, no piece list)."""
        fields = attrs.fields(type(self))  # type: ignore[arg-type]  # attrs subclasses
        return type(self), tuple(getattr(self, field.name) for field in fields)


def _streamed(cls: type[Any], field: str) -> None:
    """Make ``cls.<field>`` the joined text: the slot attrs made for the field stays its
    storage, reached as ``_text`` (a slot read, as fast as any attribute), and the field's name
    becomes a property. ``attrs.fields``, ``evolve``, ``asdict`` and ``match`` then see the
    public field and read its whole text."""
    cls._text = cls.__dict__[field]  # the field's slot (a member descriptor)
    get, set_ = (_method_of(cls, field, function) for function in (cls._get, cls._set))
    setattr(cls, field, property(get, set_, doc=f"The {field}, pieces joined on read."))


def _method_of(cls: type[Any], name: str, function: Any) -> Any:
    """``function`` under the name ``cls.<name>`` (same code, no extra call): what help(),
    tracebacks and the reference show for the property."""
    qualname = f"{cls.__qualname__}.{name}"
    # the code's own names too: a traceback shows the code's, not the function's
    code = function.__code__.replace(co_name=name, co_qualname=qualname)
    named = types.FunctionType(code, function.__globals__, name)
    named.__qualname__ = qualname
    return named


@final
@attrs.define(init=False, eq=False, repr=False, weakref_slot=False, getstate_setstate=False)
class TextContent(_Accumulating):
    """A text block. ``text`` may be streamed into with :meth:`append`."""

    type: ClassVar[Literal["text"]] = "text"
    # the optional fields' defaults are __init__'s, for tools that read attrs.fields (cattrs);
    # the string has none there, so a union of blocks tells them apart by it
    text: str
    text_signature: str | None = None

    def __init__(self, text: str = "", text_signature: str | None = None) -> None:
        self._start(text)
        self.text_signature = text_signature

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TextContent):
            return NotImplemented
        return self.text == other.text and self.text_signature == other.text_signature

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = f", text_signature={self.text_signature!r}" if self.text_signature else ""
        return f"TextContent(text={self.text!r}{extra})"


_streamed(TextContent, "text")


@final
@attrs.define(init=False, eq=False, repr=False, weakref_slot=False, getstate_setstate=False)
class ThinkingContent(_Accumulating):
    """A reasoning block. ``thinking`` may be streamed into with :meth:`append`."""

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str  # no default in attrs.fields, as TextContent's text
    thinking_signature: str | None = None
    redacted: bool = False

    def __init__(
        self, thinking: str = "", thinking_signature: str | None = None, redacted: bool = False
    ) -> None:
        self._start(thinking)
        self.thinking_signature = thinking_signature
        self.redacted = redacted

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ThinkingContent):
            return NotImplemented
        return (
            self.thinking == other.thinking
            and self.thinking_signature == other.thinking_signature
            and self.redacted == other.redacted
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ThinkingContent(thinking={self.thinking!r}, "
            f"thinking_signature={self.thinking_signature!r}, redacted={self.redacted!r})"
        )


_streamed(ThinkingContent, "thinking")


def _unlent_refs() -> int:
    """The reference count ``_keep`` sees for a piece list nothing else holds, measured the
    way ``_keep`` measures it (not assumed: it depends on how the interpreter counts)."""
    block = TextContent()
    block.append("")
    return _getrefcount(block._parts)


# without refcounts (another interpreter) no count matches: piece lists are never dropped
_UNLENT = _unlent_refs() if _getrefcount is not _no_refcount else -1


@final
@attrs.define(weakref_slot=False)
class ImageContent:
    """An image, base64-encoded."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str


@final
@attrs.define(weakref_slot=False)
class ToolCall:
    """A tool call requested by the model. ``arguments`` is the parsed JSON object."""

    type: ClassVar[Literal["toolCall"]] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    thought_signature: str | None = None


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


@final
@attrs.define(weakref_slot=False)
class UserMessage:
    """A message from the user: a string or a list of text and image blocks."""

    role: ClassVar[Literal["user"]] = "user"
    content: str | list[UserContent]
    timestamp: int = attrs.field(factory=now_ms)


@final
@attrs.define(weakref_slot=False)
class AssistantMessage:
    """A model response. ``stop_reason`` uses pi's strings; failures carry ``error_message``."""

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

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls of this message, in source order."""
        return [block for block in self.content if isinstance(block, ToolCall)]


@final
@attrs.define(weakref_slot=False)
class ToolResultMessage:
    """The result of one tool call, as the model will see it."""

    role: ClassVar[Literal["toolResult"]] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent]
    details: Any = None
    is_error: bool = False
    timestamp: int = attrs.field(factory=now_ms)


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


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


@final
@attrs.define
class Context:
    """What one model request is built from."""

    system_prompt: str | None = None
    messages: Sequence[Message] = attrs.field(factory=list)
    tools: Sequence[Tool] = attrs.field(factory=list)


_PI_MESSAGES = (UserMessage, AssistantMessage, ToolResultMessage)
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
        f"or your own class with a str role), got {describe(value)}{hint}"
    )
