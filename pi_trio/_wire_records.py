"""The hooks that put records and tagged unions on a cattrs converter, and pi's data model.

Part of :mod:`pi_trio.wire` (which documents the format): each function here registers on the
``cattrs.Converter`` it is given, so every :class:`pi_trio.wire.WireConverter` gets its own.
Records get camelCase keys with their ``type``/``role`` tag first; a union is structured by
the class its tag names, with the known tags listed when it names none. A record with an
``extra`` field (``pt.messages.KEPT``) keeps the keys it does not model, as read (checked as
free-form JSON), and writes them back after its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError
from cattrs.gen import make_dict_structure_fn, override

from ._wire_compaction import register_compaction_events
from ._wire_kept import kept_into, noted, read_extra
from ._wire_reader import readers_of
from ._wire_system import register_system_message
from ._wire_values import Invalid, camel, describe, structure_bool, structure_str
from ._wire_writer import record_writer
from .events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StreamDone,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolApprovalRequest,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from .messages import (
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultContent,
    ToolResultMessage,
    Usage,
    UsageCost,
    UserContent,
    UserMessage,
)
from .models import Model, ModelCost

__all__ = [
    "PI_ROLES",
    "install_data_model",
    "optional_fields",
    "register_literals",
    "register_record",
    "register_union",
    "tags",
]

PI_ROLES: Mapping[str, type[Any]] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "toolResult": ToolResultMessage,
    "system": SystemMessage,
}
"""pi's own message roles, which an application's message type cannot take."""


def _structure_literal(value: Any, type_: Any) -> Any:
    allowed = get_args(type_)
    if isinstance(value, bool) or value not in allowed:
        expected = ", ".join(repr(a) for a in allowed)
        raise Invalid(f"expected one of {expected}, got {value!r}")
    return value


def _is_literal(type_: Any) -> bool:
    origin: Any = get_origin(type_)
    return origin is Literal


def register_literals(conv: cattrs.Converter) -> None:
    """``Literal[...]`` fields accept exactly their values (``True`` is not ``1``)."""
    conv.register_structure_hook_func(_is_literal, _structure_literal)


def optional_fields(cls: type[Any]) -> frozenset[str]:
    """The fields of ``cls`` whose default is ``None`` (omitted from JSON while ``None``)."""
    return frozenset(f.name for f in attrs.fields(cls) if f.default is None)


def tags(*classes: Any, key: str = "type") -> Callable[[], Mapping[str, type[Any]]]:
    """The choices of a union: each class under its ``key`` class attribute."""
    table = {getattr(cls, key): cls for cls in classes}
    return lambda: table


def register_record(
    conv: cattrs.Converter,
    cls: type[Any],
    tag: tuple[str, str] | None = None,
    omit_if_default: frozenset[str] = frozenset(),
) -> None:
    """Hooks for an attrs class: camelCase keys; ``tag`` = (key, value) written first.

    It is written by a function generated from its fields (:func:`record_writer`)."""
    fields = attrs.fields(cls)
    kept = next((f.name for f in fields if f.metadata.get("pi_trio.wire") == "extra"), None)
    # NOT_ON_WIRE fields, and ``extra`` (whose keys are written in place of its name)
    local = frozenset(
        f.name for f in fields if f.metadata.get("pi_trio.wire") is False or f.name == kept
    )
    conv.register_unstructure_hook(cls, record_writer(conv, cls, tag, omit_if_default, kept, local))
    readers_of(conv).add_record(cls, tag, kept, local)
    structure_overrides = {
        f.name: override(omit=True) if f.name in local else override(rename=camel(f.name))
        for f in fields
    }
    structure: Callable[[Any, type], Any] = make_dict_structure_fn(
        cls,
        conv,
        **structure_overrides,  # type: ignore[arg-type]
    )
    if kept is not None:
        known = frozenset(camel(f.name) for f in fields if f.name not in local)
        known |= {tag[0]} if tag is not None else frozenset()
        structure = _keeping(conv, cls, kept, known, structure)

    def structure_record(data: Any, target: type) -> Any:
        if not isinstance(data, Mapping):
            raise Invalid(f"expected an object, got {describe(data)}")
        return structure(data, target)

    conv.register_structure_hook(cls, structure_record)


def _keeping(
    conv: cattrs.Converter,
    cls: type[Any],
    kept: str,
    known: frozenset[str],
    structure: Callable[[Any, type], Any],
) -> Callable[[Any, type], Any]:
    """The record's structure hook, keeping the keys it does not model in its ``kept`` field."""
    read_free = conv.structure

    def structure_keeping(data: Any, target: type) -> Any:
        obj = structure(data, target)
        if not known.issuperset(data):
            object.__setattr__(obj, kept, read_extra(data, known, read_free, cls))
        return obj

    return structure_keeping


def _register_streamed_block(
    conv: cattrs.Converter,
    cls: type[Any],
    tag: str,
    key: str,
    optional: tuple[tuple[str, str, Any], ...],
) -> None:
    """Hooks for TextContent/ThinkingContent, whose main string is a property (read through
    it when written; set by ``__init__`` when read)."""
    known = frozenset({"type", key, *(json_key for _, json_key, _ in optional)})
    read_free = conv.structure
    omitted = frozenset(attr for attr, _, _ in optional)
    unstructure = record_writer(conv, cls, ("type", tag), omitted, "extra", frozenset({"extra"}))
    readers_of(conv).add_record(cls, ("type", tag), "extra", frozenset({"extra"}))

    def structure(data: Any, _: type) -> Any:
        if not isinstance(data, Mapping):
            raise Invalid(f"expected an object, got {describe(data)}")
        errors: list[Exception] = []
        kwargs: dict[str, Any] = {}
        if key not in data:
            errors.append(noted(KeyError(key), key))
        else:
            try:
                kwargs[key] = structure_str(data[key], str)
            except Invalid as exc:
                errors.append(noted(exc, key))
        for attr, json_key, default in optional:
            value = data.get(json_key)
            if value is None:
                continue
            try:
                if isinstance(default, bool):
                    kwargs[attr] = structure_bool(value, bool)
                else:
                    kwargs[attr] = structure_str(value, str)
            except Invalid as exc:
                errors.append(noted(exc, json_key))
        kept_into(kwargs, errors, data, known, read_free, cls)
        if errors:
            raise ClassValidationError(f"While structuring {cls.__name__}", errors, cls)
        return cls(**kwargs)

    conv.register_unstructure_hook(cls, unstructure)
    conv.register_structure_hook(cls, structure)


def register_union(
    conv: cattrs.Converter,
    union: Any,
    tag_key: str,
    choices: Callable[[], Mapping[str, type[Any]]],
    what: str,
) -> None:
    """Structure ``union`` as the class ``choices()[data[tag_key]]`` (read on every call)."""
    structure_as = conv.structure

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, Mapping):
            raise Invalid(f"expected an object, got {describe(data)}")
        options = choices()
        if tag_key not in data:
            missing = noted(KeyError(tag_key), tag_key)
            raise ClassValidationError(f"While structuring {what}", [missing], object)
        tag = data[tag_key]
        cls = options.get(tag) if isinstance(tag, str) else None
        if cls is None:
            known = ", ".join(sorted(options))
            unknown = Invalid(f"unknown {what} {tag!r} (expected one of: {known})")
            raise ClassValidationError(
                f"While structuring {what}", [noted(unknown, tag_key)], object
            )
        return structure_as(data, cls)

    conv.register_structure_hook_func(lambda t: t == union, structure)
    readers_of(conv).add_union(union, tag_key, choices)


def install_data_model(
    conv: cattrs.Converter, message_roles: Callable[[], Mapping[str, type[Any]]]
) -> None:
    """pi's records and unions; ``message_roles()`` gives the roles of ``pt.AgentMessage``.

    Unions come first (they are resolved lazily); records look their field hooks up when
    registered, so the value hooks must already be on ``conv``.
    """
    register_union(
        conv, AssistantContent, "type", tags(TextContent, ThinkingContent, ToolCall), "type"
    )
    register_union(conv, UserContent, "type", tags(TextContent, ImageContent), "type")
    register_union(conv, ToolResultContent, "type", tags(TextContent, ImageContent), "type")
    register_union(conv, Message, "role", lambda: PI_ROLES, "role")
    register_union(conv, AgentMessage, "role", message_roles, "role")
    register_union(
        conv,
        StreamEvent,
        "type",
        tags(StreamStart, TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta,
             ThinkingEnd, ToolCallStart, ToolCallDelta, ToolCallEnd, StreamDone, StreamError),
        "type",
    )  # fmt: skip
    register_union(
        conv,
        AgentEvent,
        "type",
        tags(AgentStart, AgentEnd, TurnStart, TurnEnd, MessageStart, MessageUpdate, MessageEnd,
             ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd, ToolApprovalRequest,
             CompactionStart, CompactionEnd),
        "type",
    )  # fmt: skip
    structure_as = conv.structure

    def structure_user_content(value: Any, _: Any) -> str | list[UserContent]:
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return structure_as(value, list[UserContent])
        raise Invalid(f"expected a string or an array, got {describe(value)}")

    conv.register_structure_hook_func(
        lambda t: t == (str | list[UserContent]), structure_user_content
    )
    text_optional = (("text_signature", "textSignature", None),)
    _register_streamed_block(conv, TextContent, "text", "text", text_optional)
    thinking_optional = (
        ("thinking_signature", "thinkingSignature", None),
        ("redacted", "redacted", False),
    )
    _register_streamed_block(conv, ThinkingContent, "thinking", "thinking", thinking_optional)
    register_record(conv, ImageContent, ("type", "image"))
    register_record(conv, ToolCall, ("type", "toolCall"), optional_fields(ToolCall))
    register_record(conv, UsageCost)
    register_record(conv, Usage)
    register_record(conv, UserMessage, ("role", "user"))
    register_record(
        conv, AssistantMessage, ("role", "assistant"), optional_fields(AssistantMessage)
    )
    register_record(
        conv, ToolResultMessage, ("role", "toolResult"), optional_fields(ToolResultMessage)
    )
    register_record(
        conv,
        ToolResult,
        None,
        frozenset({"details", "terminate", "is_error", "structured_content", "usage"}),
    )
    register_system_message(conv)  # _wire_system
    register_compaction_events(conv)
    register_record(conv, Tool)
    register_record(conv, Context, None, frozenset({"system_prompt"}))
    register_record(conv, ModelCost)
    register_record(conv, Model, None, frozenset({"headers", "compat"}))
    for event_cls in (
        StreamStart, TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta, ThinkingEnd,
        ToolCallStart, ToolCallDelta, ToolCallEnd, StreamDone, StreamError,
        AgentStart, AgentEnd, TurnStart, TurnEnd, MessageStart, MessageUpdate, MessageEnd,
        ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd, ToolApprovalRequest,
    ):  # fmt: skip
        register_record(
            conv, event_cls, ("type", event_cls.type), frozenset({"duration_ms"})
        )  # only ToolExecutionEnd has one: omitted while None, as pi 1.6 omits it
