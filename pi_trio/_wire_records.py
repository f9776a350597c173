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
from cattrs.errors import AttributeValidationNote, ClassValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._wire_compaction import register_compaction_events
from ._wire_values import Invalid, camel, describe, structure_bool, structure_str
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


def _noted(exc: Exception, name: str) -> Exception:
    """Mark ``exc`` as being about the key ``name``, the way cattrs marks attributes."""
    note = AttributeValidationNote(f"Structuring @ attribute {name}", name, object)
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
    return exc


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
    """Hooks for an attrs class: camelCase keys; ``tag`` = (key, value) written first."""
    fields = attrs.fields(cls)
    kept = next((f.name for f in fields if f.metadata.get("pi_trio.wire") == "extra"), None)
    # NOT_ON_WIRE fields, and ``extra`` (whose keys are written in place of its name)
    local = {f.name for f in fields if f.metadata.get("pi_trio.wire") is False or f.name == kept}
    unstructure_overrides = {
        f.name: override(omit=True)
        if f.name in local
        else override(rename=camel(f.name), omit_if_default=f.name in omit_if_default)
        for f in fields
    }
    structure_overrides = {
        f.name: override(omit=True) if f.name in local else override(rename=camel(f.name))
        for f in fields
    }
    unstructure: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls,
        conv,
        **unstructure_overrides,  # type: ignore[arg-type]
    )
    structure: Callable[[Any, type], Any] = make_dict_structure_fn(
        cls,
        conv,
        **structure_overrides,  # type: ignore[arg-type]
    )
    if tag is not None:
        key, value = tag
        untagged = unstructure

        def unstructure(obj: Any) -> dict[str, Any]:
            return {key: value, **untagged(obj)}

    if kept is not None:
        known = frozenset(camel(f.name) for f in fields if f.name not in local)
        known |= {tag[0]} if tag is not None else frozenset()
        unstructure, structure = _keeping(conv, cls, kept, known, unstructure, structure)
    conv.register_unstructure_hook(cls, unstructure)

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
    unstructure: Callable[[Any], dict[str, Any]],
    structure: Callable[[Any, type], Any],
) -> tuple[Callable[[Any], dict[str, Any]], Callable[[Any, type], Any]]:
    """The record's hooks, keeping the keys it does not model in its ``kept`` field."""
    read_free, write_free = conv.structure, conv.unstructure

    def unstructure_keeping(obj: Any) -> dict[str, Any]:
        out = unstructure(obj)
        extra = getattr(obj, kept)
        if extra:
            for name, value in extra.items():
                if name not in known:  # never over a modelled key (or the tag)
                    out[name] = write_free(value, Any)
        return out

    def structure_keeping(data: Any, target: type) -> Any:
        obj = structure(data, target)
        if not known.issuperset(data):
            object.__setattr__(obj, kept, read_extra(data, known, read_free, cls))
        return obj

    return unstructure_keeping, structure_keeping


def read_extra(
    data: Mapping[str, Any],
    known: frozenset[str],
    read_free: Callable[[Any, Any], Any],
    cls: type[Any],
) -> dict[str, Any]:
    """The keys of ``data`` not in ``known``, each checked as free-form JSON."""
    extra: dict[str, Any] = {}
    errors: list[Exception] = []
    for name, value in data.items():
        if name in known:
            continue
        try:
            extra[name] = read_free(value, Any)
        except Invalid as exc:
            errors.append(_noted(exc, name))
    if errors:
        raise ClassValidationError(f"While structuring {cls.__name__}", errors, cls)
    return extra


def _register_streamed_block(
    conv: cattrs.Converter,
    cls: type[Any],
    tag: str,
    key: str,
    optional: tuple[tuple[str, str, Any], ...],
) -> None:
    """Hooks for TextContent/ThinkingContent, whose main string is a property."""
    known = frozenset({"type", key, *(json_key for _, json_key, _ in optional)})
    read_free, write_free = conv.structure, conv.unstructure

    def unstructure(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": tag, key: getattr(obj, key)}
        for attr, json_key, default in optional:
            value = getattr(obj, attr)
            if value != default:
                out[json_key] = value
        extra = obj.extra
        if extra:
            for name, value in extra.items():
                if name not in known:
                    out[name] = write_free(value, Any)
        return out

    def structure(data: Any, _: type) -> Any:
        if not isinstance(data, Mapping):
            raise Invalid(f"expected an object, got {describe(data)}")
        errors: list[Exception] = []
        kwargs: dict[str, Any] = {}
        if key not in data:
            errors.append(_noted(KeyError(key), key))
        else:
            try:
                kwargs[key] = structure_str(data[key], str)
            except Invalid as exc:
                errors.append(_noted(exc, key))
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
                errors.append(_noted(exc, json_key))
        if not known.issuperset(data):
            try:
                kwargs["extra"] = read_extra(data, known, read_free, cls)
            except ClassValidationError as group:
                errors.extend(group.exceptions)
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
            missing = _noted(KeyError(tag_key), tag_key)
            raise ClassValidationError(f"While structuring {what}", [missing], object)
        tag = data[tag_key]
        cls = options.get(tag) if isinstance(tag, str) else None
        if cls is None:
            known = ", ".join(sorted(options))
            unknown = Invalid(f"unknown {what} {tag!r} (expected one of: {known})")
            raise ClassValidationError(
                f"While structuring {what}", [_noted(unknown, tag_key)], object
            )
        return structure_as(data, cls)

    conv.register_structure_hook_func(lambda t: t == union, structure)


def register_system_message(conv: cattrs.Converter) -> None:
    """pi-ai 1.6's SystemMessage: ``toolsRemoved`` is a list of ``{"name": ...}`` objects,
    and ``sections`` and the tool lists are omitted while empty, as pi writes them."""
    known = frozenset({"role", "content", "sections", "toolsAdded", "toolsRemoved", "timestamp"})
    structure_as, unstructure_as = conv.structure, conv.unstructure

    def unstructure(message: SystemMessage) -> dict[str, Any]:
        content = message.content
        out: dict[str, Any] = {
            "role": "system",
            "content": content if isinstance(content, str) else unstructure_as(content),
        }
        if message.sections is not None:
            out["sections"] = dict(message.sections)
        if message.tools_added:
            out["toolsAdded"] = [unstructure_as(tool, Tool) for tool in message.tools_added]
        if message.tools_removed:
            out["toolsRemoved"] = [{"name": name} for name in message.tools_removed]
        out["timestamp"] = message.timestamp
        if message.extra:
            for name, value in message.extra.items():
                if name not in known:
                    out[name] = unstructure_as(value, Any)
        return out

    readers: tuple[tuple[str, Callable[[Any], Any]], ...] = (
        ("content", lambda v: _system_content(v, structure_as)),
        ("sections", _sections),
        ("toolsAdded", lambda v: tuple(structure_as(v, list[Tool]))),
        ("toolsRemoved", _tool_names),
        ("timestamp", lambda v: structure_as(v, int)),
    )
    attributes = {"toolsAdded": "tools_added", "toolsRemoved": "tools_removed"}

    def structure(data: Any, _: type) -> SystemMessage:
        if not isinstance(data, Mapping):
            raise Invalid(f"expected an object, got {describe(data)}")
        kwargs: dict[str, Any] = {}
        errors: list[Exception] = []
        for key, read in readers:
            if key not in data:
                if key in ("content", "timestamp"):
                    errors.append(_noted(KeyError(key), key))
                continue
            try:
                kwargs[attributes.get(key, key)] = read(data[key])
            except Exception as exc:
                errors.append(_noted(exc, key))
        if not known.issuperset(data):
            try:
                kwargs["extra"] = read_extra(data, known, structure_as, SystemMessage)
            except ClassValidationError as group:
                errors.extend(group.exceptions)
        if errors:
            raise ClassValidationError("While structuring SystemMessage", errors, SystemMessage)
        return SystemMessage(**kwargs)

    conv.register_unstructure_hook(SystemMessage, unstructure)
    conv.register_structure_hook(SystemMessage, structure)


def _system_content(value: Any, structure_as: Callable[[Any, Any], Any]) -> Any:
    """A system message's ``content``: a string, or an array of text blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return structure_as(value, list[TextContent])
    raise Invalid(f"expected a string or an array of text blocks, got {describe(value)}")


def _sections(value: Any) -> dict[str, str | None] | None:
    """``sections``: names to texts, a null removing the section."""
    if not isinstance(value, Mapping):
        raise Invalid(f"expected an object, got {describe(value)}")
    for name, text in value.items():
        if text is not None and not isinstance(text, str):
            raise Invalid(f"section {name!r}: expected a string or null, got {describe(text)}")
    return dict(value)


def _tool_names(value: Any) -> tuple[str, ...]:
    """``toolsRemoved``'s names: ``[{"name": "read"}, ...]``."""
    if not isinstance(value, list):
        raise Invalid(f"expected an array, got {describe(value)}")
    names = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise Invalid(f"[{index}]: expected an object with a string name, got {item!r}"[:200])
        names.append(item["name"])
    return tuple(names)


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
             ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd, CompactionStart,
             CompactionEnd),
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
    register_system_message(conv)
    register_compaction_events(conv)
    register_record(conv, Tool)
    register_record(conv, Context, None, frozenset({"system_prompt"}))
    register_record(conv, ModelCost)
    register_record(conv, Model, None, frozenset({"headers", "compat"}))
    for event_cls in (
        StreamStart, TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta, ThinkingEnd,
        ToolCallStart, ToolCallDelta, ToolCallEnd, StreamDone, StreamError,
        AgentStart, AgentEnd, TurnStart, TurnEnd, MessageStart, MessageUpdate, MessageEnd,
        ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd,
    ):  # fmt: skip
        register_record(
            conv, event_cls, ("type", event_cls.type), frozenset({"duration_ms"})
        )  # only ToolExecutionEnd has one: omitted while None, as pi 1.6 omits it
