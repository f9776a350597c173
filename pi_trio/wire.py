"""pi's JSON wire format: the one cattrs converter and every hook it has, registered here.

``to_json(obj)`` gives the dict pi would produce (camelCase keys, ``type``/``role`` tags first,
optional fields omitted as pi omits them); ``from_json(data, cls)`` reads it back, where
``cls`` is a class or one of the unions (``pt.AgentMessage``, ``pt.AgentEvent``,
``pt.StreamEvent``, ...). Unknown extra keys are ignored. Anything else that does not fit
raises one :class:`pt.WireFormatError` whose message names the path of the problem
(``messages[1].content[2].type: unknown type 'img'``); it never leaks a bare KeyError or a
cattrs exception group.

Types are checked strictly: a string where a number belongs is an error, not a coercion, and
free-form values (tool arguments, details) must be JSON values (no NaN, no non-string keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, cast, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import AttributeValidationNote, ClassValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._errors import WireFormatError
from .events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
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

__all__ = ["converter", "from_json", "register_message_type", "register_records", "to_json"]

T = TypeVar("T")

converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=False)
"""The converter behind :func:`to_json`/:func:`from_json`. Register hooks here, nowhere else."""


class _Invalid(ValueError):
    """A value that does not fit; its text is the whole explanation.

    ``subpath`` locates the problem inside the value (``.a[2]``) for free-form JSON values.
    """

    def __init__(self, message: str, subpath: str = "") -> None:
        super().__init__(message)
        self.subpath = subpath


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# --- strict primitives and free-form JSON --------------------------------------------------


def _structure_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"expected a string, got {_describe(value)}")
    return value


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Invalid(f"expected an integer, got {_describe(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            raise _Invalid(f"expected an integer, got {value!r}")
        return int(value)
    return value


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Invalid(f"expected a number, got {_describe(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Invalid(f"expected a finite number, got {value!r}")
    return value  # an int stays an int, so JSON written back is identical


def _structure_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"expected a boolean, got {_describe(value)}")
    return value


def _check_json(value: Any, path: str = "") -> Any:
    """``value`` itself if it is a JSON value; otherwise :class:`_Invalid` naming the spot."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid(f"not a JSON number: {value!r}", path)
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]")
        return value
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Invalid(f"object key {key!r} is not a string", path)
            _check_json(item, f"{path}.{key}")
        return value
    raise _Invalid(f"not a JSON value: {type(value).__name__}", path)


def _structure_json_object(value: Any, _: type) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"expected an object, got {_describe(value)}")
    return cast(dict[str, Any], _check_json(value))


converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _structure_bool)


def _structure_literal(value: Any, type_: Any) -> Any:
    allowed = get_args(type_)
    if isinstance(value, bool) or value not in allowed:
        expected = ", ".join(repr(a) for a in allowed)
        raise _Invalid(f"expected one of {expected}, got {value!r}")
    return value


def _is_literal(type_: Any) -> bool:
    return bool(get_origin(type_) == Literal)


converter.register_structure_hook_func(_is_literal, _structure_literal)


def _is_any(type_: Any) -> bool:
    return type_ is Any


converter.register_structure_hook_func(_is_any, lambda v, _: _check_json(v))
converter.register_structure_hook_func(lambda t: t == dict[str, Any], _structure_json_object)


# --- attrs classes: camelCase keys, tag first, optional fields omitted ----------------------


def _register_record(
    cls: type[Any],
    tag: tuple[str, str] | None = None,
    omit_if_default: frozenset[str] = frozenset(),
) -> None:
    """Register camelCase hooks for an attrs class; ``tag`` = (key, value) written first."""
    fields = attrs.fields(cls)
    unstructure_overrides = {
        f.name: override(rename=_camel(f.name), omit_if_default=f.name in omit_if_default)
        for f in fields
    }
    structure_overrides = {f.name: override(rename=_camel(f.name)) for f in fields}
    unstructure = make_dict_unstructure_fn(cls, converter, **unstructure_overrides)  # type: ignore[arg-type]
    structure = make_dict_structure_fn(cls, converter, **structure_overrides)  # type: ignore[arg-type]
    if tag is None:
        converter.register_unstructure_hook(cls, unstructure)
    else:
        key, value = tag

        def unstructure_tagged(obj: Any) -> dict[str, Any]:
            return {key: value, **unstructure(obj)}

        converter.register_unstructure_hook(cls, unstructure_tagged)

    def structure_record(data: Any, target: type) -> Any:
        if not isinstance(data, Mapping):
            raise _Invalid(f"expected an object, got {_describe(data)}")
        return structure(data, target)

    converter.register_structure_hook(cls, structure_record)


def _optional_fields(cls: type[Any]) -> frozenset[str]:
    return frozenset(f.name for f in attrs.fields(cls) if f.default is None)


def _register_streamed_block(
    cls: type[Any], tag: str, key: str, optional: tuple[tuple[str, str, Any], ...]
) -> None:
    """Hooks for TextContent/ThinkingContent, whose main string is a property."""

    def unstructure(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": tag, key: getattr(obj, key)}
        for attr, json_key, default in optional:
            value = getattr(obj, attr)
            if value != default:
                out[json_key] = value
        return out

    def structure(data: Any, _: type) -> Any:
        if not isinstance(data, Mapping):
            raise _Invalid(f"expected an object, got {_describe(data)}")
        errors: list[Exception] = []
        kwargs: dict[str, Any] = {}
        if key not in data:
            errors.append(_noted(KeyError(key), key))
        else:
            try:
                kwargs[key] = _structure_str(data[key], str)
            except _Invalid as exc:
                errors.append(_noted(exc, key))
        for attr, json_key, default in optional:
            value = data.get(json_key)
            if value is None:
                continue
            try:
                if isinstance(default, bool):
                    kwargs[attr] = _structure_bool(value, bool)
                else:
                    kwargs[attr] = _structure_str(value, str)
            except _Invalid as exc:
                errors.append(_noted(exc, json_key))
        if errors:
            raise ClassValidationError(f"While structuring {cls.__name__}", errors, cls)
        return cls(**kwargs)

    converter.register_unstructure_hook(cls, unstructure)
    converter.register_structure_hook(cls, structure)


def _noted(exc: Exception, name: str) -> Exception:
    """Mark ``exc`` as being about the key ``name``, the way cattrs marks attributes."""
    note = AttributeValidationNote(f"Structuring @ attribute {name}", name, object)
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
    return exc


# --- tagged unions -------------------------------------------------------------------------


def _register_union(
    union: Any, tag_key: str, choices: Callable[[], Mapping[str, type[Any]]], what: str
) -> None:
    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, Mapping):
            raise _Invalid(f"expected an object, got {_describe(data)}")
        options = choices()
        if tag_key not in data:
            raise ClassValidationError(
                f"While structuring {what}",
                [_noted(KeyError(tag_key), tag_key)],
                object,
            )
        tag = data[tag_key]
        cls = options.get(tag) if isinstance(tag, str) else None
        if cls is None:
            known = ", ".join(sorted(options))
            raise ClassValidationError(
                f"While structuring {what}",
                [_noted(_Invalid(f"unknown {what} {tag!r} (expected one of: {known})"), tag_key)],
                object,
            )
        return converter.structure(data, cls)

    converter.register_structure_hook_func(lambda t: t == union, structure)


def _tags(*classes: Any, key: str = "type") -> Callable[[], Mapping[str, type[Any]]]:
    table = {getattr(cls, key): cls for cls in classes}
    return lambda: table


_custom_messages: dict[str, type[Any]] = {}


def _message_roles() -> Mapping[str, type[Any]]:
    return {
        "user": UserMessage,
        "assistant": AssistantMessage,
        "toolResult": ToolResultMessage,
        **_custom_messages,
    }


_register_union(AssistantContent, "type", _tags(TextContent, ThinkingContent, ToolCall), "type")
_register_union(UserContent, "type", _tags(TextContent, ImageContent), "type")
_register_union(ToolResultContent, "type", _tags(TextContent, ImageContent), "type")
_register_union(
    Message, "role", _tags(UserMessage, AssistantMessage, ToolResultMessage, key="role"), "role"
)
_register_union(AgentMessage, "role", _message_roles, "role")
_register_union(
    StreamEvent,
    "type",
    _tags(StreamStart, TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta,
          ThinkingEnd, ToolCallStart, ToolCallDelta, ToolCallEnd, StreamDone, StreamError),
    "type",
)  # fmt: skip
_register_union(
    AgentEvent,
    "type",
    _tags(AgentStart, AgentEnd, TurnStart, TurnEnd, MessageStart, MessageUpdate, MessageEnd,
          ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd),
    "type",
)  # fmt: skip


def _structure_user_content(value: Any, _: Any) -> str | list[UserContent]:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return converter.structure(value, list[UserContent])
    raise _Invalid(f"expected a string or an array, got {_describe(value)}")


converter.register_structure_hook_func(
    lambda t: t == (str | list[UserContent]), _structure_user_content
)


# --- registrations: unions above are resolved lazily, records look their field hooks up now

_register_streamed_block(TextContent, "text", "text", (("text_signature", "textSignature", None),))
_register_streamed_block(
    ThinkingContent,
    "thinking",
    "thinking",
    (("thinking_signature", "thinkingSignature", None), ("redacted", "redacted", False)),
)
_register_record(ImageContent, ("type", "image"))
_register_record(ToolCall, ("type", "toolCall"), _optional_fields(ToolCall))
_register_record(UsageCost)
_register_record(Usage)
_register_record(UserMessage, ("role", "user"))
_register_record(AssistantMessage, ("role", "assistant"), _optional_fields(AssistantMessage))
_register_record(ToolResultMessage, ("role", "toolResult"), frozenset({"details"}))
_register_record(ToolResult, None, frozenset({"details", "terminate"}))
_register_record(Tool)
_register_record(Context, None, frozenset({"system_prompt"}))
_register_record(ModelCost)
_register_record(Model, None, frozenset({"headers", "compat"}))

for _event_cls in (
    StreamStart, TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta, ThinkingEnd,
    ToolCallStart, ToolCallDelta, ToolCallEnd, StreamDone, StreamError,
    AgentStart, AgentEnd, TurnStart, TurnEnd, MessageStart, MessageUpdate, MessageEnd,
    ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd,
):  # fmt: skip
    _register_record(_event_cls, ("type", _event_cls.type))


def register_message_type(cls: type[Any], role: str | None = None) -> None:
    """Let the wire format carry an application's own message class.

    ``cls`` is an attrs class; ``role`` defaults to its ``role`` class attribute (or the default
    of its ``role`` field). Its JSON is its fields in camelCase with ``role`` first.
    """
    if role is None:
        declared = getattr(cls, "role", None)
        if not isinstance(declared, str):
            field = attrs.fields_dict(cls).get("role")
            declared = field.default if field is not None else None
        if not isinstance(declared, str):
            raise TypeError(f"{cls.__name__} needs a string 'role' (or pass role=...)")
        role = declared
    if role in ("user", "assistant", "toolResult"):
        raise ValueError(f"role {role!r} is pi's own and cannot be replaced")
    has_role_field = "role" in attrs.fields_dict(cls)
    _register_record(cls, None if has_role_field else ("role", role))
    _custom_messages[role] = cls


def register_records(*classes: type[Any], union: Any = None) -> None:
    """Put attrs classes defined outside the data model on the one converter.

    For protocol records such as :mod:`pi_trio.proxy`'s events: keys in camelCase, fields
    whose default is ``None`` omitted while ``None``; a class with a string ``type`` class
    attribute is written with that tag first. With ``union`` (a union of those tagged
    classes), ``from_json(data, union)`` picks the class by ``data["type"]``.
    """
    tagged = []
    for cls in classes:
        tag = getattr(cls, "type", None)
        if isinstance(tag, str) and "type" not in attrs.fields_dict(cls):
            _register_record(cls, ("type", tag), _optional_fields(cls))
            tagged.append(cls)
        else:
            _register_record(cls, None, _optional_fields(cls))
    if union is not None:
        _register_union(union, "type", _tags(*tagged), "type")


# --- entry points ---------------------------------------------------------------------------

_PATH_SUFFIX = re.compile(r" @ \$(?P<path>\S*)$")


_SUBPATH = "\x1f"
_SEGMENT = re.compile(r"\.([A-Za-z0-9_]+)")


def _format_exception(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, _Invalid):
        return f"{exc.subpath}{_SUBPATH}{exc}" if exc.subpath else str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, ValueError | TypeError) and type_ is not None:
        text = str(exc)
        return text if text else f"invalid value for {getattr(type_, '__name__', type_)}"
    return f"{type(exc).__name__}: {exc}"


def _problems(exc: BaseException) -> list[str]:
    problems = []
    for line in cattrs.transform_error(
        cast(Exception, exc), path="$", format_exception=_format_exception
    ):
        match = _PATH_SUFFIX.search(line)
        if match:
            # attribute names -> pi's JSON keys; a free-form value adds its own sub-path
            path = _SEGMENT.sub(lambda m: "." + _camel(m.group(1)), match.group("path"))
            text = line[: match.start()]
            if _SUBPATH in text:
                subpath, text = text.split(_SUBPATH, 1)
                path += subpath
            problems.append(f"{path.lstrip('.') or '(root)'}: {text}")
        else:
            problems.append(line)
    return problems


def from_json(data: Any, cls: type[T] | Any) -> T:
    """Read pi's JSON (already parsed, e.g. by ``json.loads``) into ``cls``.

    Raises :class:`pt.WireFormatError` when ``data`` does not fit; its message lists every
    problem as ``path: what is wrong``.
    """
    try:
        return cast(T, converter.structure(data, cls))
    except RecursionError:
        raise WireFormatError("(root): nested too deeply") from None
    except Exception as exc:
        problems = _problems(exc) or [f"(root): {exc}"]
        message = problems[0] if len(problems) == 1 else "; ".join(problems)
        raise WireFormatError(message, tuple(problems)) from None


def to_json(obj: Any) -> Any:
    """``obj`` as pi's JSON: plain dicts, lists, strings, numbers, booleans and None."""
    return converter.unstructure(obj)
