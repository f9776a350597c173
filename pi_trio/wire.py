"""pi's JSON wire format: converters that know pi's data model, and the default one.

``to_json(obj)`` gives the dict pi would produce (camelCase keys, ``type``/``role`` tags first,
optional fields omitted as pi omits them); ``from_json(data, cls)`` reads it back, where
``cls`` is a class or one of the unions (``pt.AgentMessage``, ``pt.AgentEvent``,
``pt.StreamEvent``, ...). A key a record does not model (a newer pi's field) is kept in its
``extra`` and written back after its own keys. Anything else that does not fit raises one
:class:`pt.WireFormatError` whose message names the path of the problem
(``messages[1].content[2].type: unknown type 'img'``); it never leaks a bare KeyError or a
cattrs exception group.

Both directions are generated from the records' attrs fields: each record is written by one
function made for it (no wrapper per call), and read first by a reader made for it that takes
well-formed JSON of exact types and no unknown key; anything else is read again by the checked
path, which keeps unknown keys and reports every problem. A session log is written and read
by these two functions, nothing else.

Types are checked strictly: a string where a number belongs is an error, not a coercion, and
free-form values (tool arguments, details, ``compat``, metadata, tool schemas) must be JSON
values (no NaN, no non-string keys) nesting at most ``max_depth`` arrays/objects (default
:data:`DEFAULT_MAX_DEPTH`, 64). The limit holds on read and on write, so a hostile document
is refused with the path where it nests too deeply (``details[0][0]...: nested deeper than
64 arrays/objects``) instead of exhausting the stack later. The records around a free-form
value add a few levels of their own (at most 8 in pi's data model).

The module-level functions use one process-wide default converter, which pi_trio's own
protocol records (:mod:`pi_trio.proxy`) are registered on. Code that registers its own message
types, or wants another ``max_depth``, makes a private converter with :func:`make_converter`
and calls its methods; the default, and every other converter, stay as they were::

    wire = pt.wire.make_converter(max_depth=32)
    wire.register_message_type(Note)
    data = wire.to_json(note)
    note = wire.from_json(data, pt.AgentMessage)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast, final

import attrs

from ._errors import WireFormatError
from ._wire_reader import RecordConverter
from ._wire_records import (
    PI_ROLES,
    install_data_model,
    optional_fields,
    register_literals,
    register_record,
    register_union,
    tags,
)
from ._wire_values import (
    DEFAULT_MAX_DEPTH,
    Invalid,
    camel,
    describe,
    json_walkers,
    problems,
    structure_bool,
    structure_float,
    structure_int,
    structure_str,
)
from .coding_messages import CODING_MESSAGE_TYPES, OMITTED_WHILE_NONE

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "WireConverter",
    "carries_message",
    "converter",
    "default_converter",
    "from_json",
    "make_converter",
    "register_message_type",
    "register_records",
    "to_json",
]

T = TypeVar("T")

_PI_MESSAGE_TYPES = frozenset(PI_ROLES.values())


def _is_free_form(type_: Any) -> bool:
    return type_ is Any or type_ == dict[str, Any] or type_ == Mapping[str, Any]


@final
class WireConverter:
    """pi's wire format on a cattrs converter of its own; make one with :func:`make_converter`.

    Registering a message type or records on one converter changes no other. ``max_depth``
    is how many arrays/objects a free-form value may nest; ``converter`` is the underlying
    ``cattrs.Converter`` (register records through the methods here).
    """

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"max_depth must be a positive integer, got {max_depth!r}")
        self.max_depth = max_depth
        self.converter = RecordConverter(detailed_validation=True, forbid_extra_keys=False)
        self._structure = self.converter.structure
        self._unstructure = self.converter.unstructure
        self._custom_messages: dict[str, type[Any]] = {}
        self._registrations: list[Callable[[WireConverter], None]] = []
        self._check, self._copy = json_walkers(max_depth, self._unstructure)
        self._readers = self.converter.readers
        self._generated = self._readers.generated
        self._install_values()
        install_data_model(self.converter, self._message_roles)
        for cls in CODING_MESSAGE_TYPES:  # pi-coding-agent's: part of the data model read
            omitted = OMITTED_WHILE_NONE.get(cls, frozenset())
            register_record(self.converter, cls, ("role", cls.role), omitted)
            self._custom_messages[cls.role] = cls

    def __repr__(self) -> str:
        return f"<pi_trio.wire.WireConverter max_depth={self.max_depth}>"

    def _install_values(self) -> None:
        conv, check = self.converter, self._check
        conv.register_structure_hook(str, structure_str)
        conv.register_structure_hook(int, structure_int)
        conv.register_structure_hook(float, structure_float)
        conv.register_structure_hook(bool, structure_bool)
        register_literals(conv)

        def structure_free_form(value: Any, type_: Any) -> Any:
            if type_ is not Any and not isinstance(value, dict):
                raise Invalid(f"expected an object, got {describe(value)}")
            return check(value)

        conv.register_structure_hook_func(_is_free_form, structure_free_form)
        conv.register_unstructure_hook_func(_is_free_form, self._copy)

    def _message_roles(self) -> Mapping[str, type[Any]]:
        return {**PI_ROLES, **self._custom_messages}

    def carries_message(self, message: object) -> bool:
        """Whether this converter writes ``message`` as pi's JSON and reads it back: pi's own
        messages, and those of a type registered with :meth:`register_message_type`."""
        if type(message) in _PI_MESSAGE_TYPES:
            return True
        role = getattr(message, "role", None)
        return isinstance(role, str) and type(message) is self._custom_messages.get(role)

    # --- reading and writing -------------------------------------------------------------

    def from_json(self, data: Any, cls: type[T] | Any) -> T:
        """Read pi's JSON (already parsed, e.g. by ``json.loads``) into ``cls``.

        Raises:
            pt.WireFormatError: ``data`` does not fit; its message lists every problem as
                ``path: what is wrong`` (a free-form value nested deeper than ``max_depth``
                included).
            MemoryError: as itself, never as a format error.
        """
        out_of_memory: MemoryError | None = None  # the process's trouble, not the data's
        try:  # the plain shapes first; anything else the checked path reads (_wire_reader)
            fast = self._generated.get(cls) or self._readers.reader(cls)
            if fast is not None:
                return cast(T, fast(data))
        except Exception as exc:  # bare, or in a group cattrs made: not read a second time
            out_of_memory = _out_of_memory(exc)
        if out_of_memory is None:
            try:
                return cast(T, self._structure(data, cls))
            except RecursionError:  # only a self-nesting record type of an application's own
                raise WireFormatError("(root): nested too deeply") from None
            except Exception as exc:
                out_of_memory = _out_of_memory(exc)
                if out_of_memory is None:
                    found = problems(exc) or [f"(root): {exc}"]
                    message = found[0] if len(found) == 1 else "; ".join(found)
                    raise WireFormatError(message, tuple(found)) from None
        raise out_of_memory  # outside the handlers: its context is not the group holding it

    def to_json(self, obj: Any) -> Any:
        """``obj`` as pi's JSON: plain dicts, lists, strings, numbers, booleans and None.

        Raises:
            pt.WireFormatError: a free-form value in ``obj`` nests deeper than ``max_depth``
                (the message names its path: ``details[0][0]...: nested deeper than ...``),
                or a field holds a value of another type (``usage=None``, say).
        """
        try:
            return self._unstructure(obj)
        except Invalid as exc:
            problem = f"{(self._locate(obj) or '').lstrip('.') or '(root)'}: {exc}"
            raise WireFormatError(problem, (problem,)) from None
        except RecursionError:  # only a self-nesting record type of an application's own
            raise WireFormatError("(root): nested too deeply to write") from None
        except (AttributeError, TypeError) as exc:  # a field holding a value of another type
            problem = (
                f"(root): cannot write this {type(obj).__name__} ({type(exc).__name__}: {exc})"
            )
            raise WireFormatError(problem, (problem,)) from exc

    def _locate(self, value: Any) -> str | None:
        """The path below ``value`` of what :meth:`to_json` refuses (slow; after a failure)."""
        if attrs.has(type(value)):
            for field in attrs.fields(type(value)):
                found = self._locate(getattr(value, field.name))
                if found is not None:
                    return f".{camel(field.name)}{found}"
            return None
        if isinstance(value, list | tuple) and any(attrs.has(type(v)) for v in value):
            for index, item in enumerate(value):
                found = self._locate(item)
                if found is not None:
                    return f"[{index}]{found}"
            return None
        try:  # a free-form value
            self._copy(value)
        except Invalid as exc:
            return exc.subpath
        return None

    # --- registering ---------------------------------------------------------------------

    def register_message_type(self, cls: type[Any], role: str | None = None) -> None:
        """Let this converter carry an application's own message class.

        Its JSON is its fields in camelCase with ``role`` first. Keep its attrs validators
        and converters free of side effects: one read may build a part of the object twice
        (a fast reader that meets a shape it does not take hands the JSON to the checked one).

        Args:
            cls: an attrs class.
            role: its ``role`` tag; defaults to its ``role`` class attribute (or the default
                of its ``role`` field).

        Raises:
            TypeError: no string role was given or found.
            ValueError: ``role`` is one of pi's own (``user``, ``assistant``, ``toolResult``).
        """
        if role is None:
            declared = getattr(cls, "role", None)
            if not isinstance(declared, str):
                field = attrs.fields_dict(cls).get("role")
                declared = field.default if field is not None else None
            if not isinstance(declared, str):
                raise TypeError(f"{cls.__name__} needs a string 'role' (or pass role=...)")
            role = declared
        if role in PI_ROLES:
            raise ValueError(f"role {role!r} is pi's own and cannot be replaced")
        has_role_field = "role" in attrs.fields_dict(cls)
        register_record(self.converter, cls, None if has_role_field else ("role", role))
        self._custom_messages[role] = cls
        self._registrations.append(lambda other: other.register_message_type(cls, role))

    def register_records(self, *classes: type[Any], union: Any = None) -> None:
        """Put attrs classes defined outside the data model on this converter.

        For protocol records such as :mod:`pi_trio.proxy`'s events: keys in camelCase, fields
        whose default is ``None`` omitted while ``None``; a class with a string ``type`` class
        attribute is written with that tag first. As for :meth:`register_message_type`,
        their validators may run more than once for one read.

        Args:
            classes: attrs classes.
            union: a union of the tagged ``classes``; ``from_json(data, union)`` then picks
                the class by ``data["type"]``.
        """
        tagged = []
        for cls in classes:
            tag = getattr(cls, "type", None)
            if isinstance(tag, str) and "type" not in attrs.fields_dict(cls):
                register_record(self.converter, cls, ("type", tag), optional_fields(cls))
                tagged.append(cls)
            else:
                register_record(self.converter, cls, None, optional_fields(cls))
        if union is not None:
            register_union(self.converter, union, "type", tags(*tagged), "type")
        self._registrations.append(lambda other: other.register_records(*classes, union=union))

    def copy(self, *, max_depth: int | None = None) -> WireConverter:
        """A new converter with everything registered on this one so far.

        Args:
            max_depth: the copy's limit (default: this converter's).

        Raises:
            ValueError: ``max_depth`` is not a positive integer.
        """
        other = WireConverter(max_depth=self.max_depth if max_depth is None else max_depth)
        for register in self._registrations:
            register(other)
        return other


def _out_of_memory(exc: BaseException) -> MemoryError | None:
    """The MemoryError in ``exc`` or in the groups of errors it holds, if any."""
    if isinstance(exc, MemoryError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _out_of_memory(inner)
            if found is not None:
                return found
    return None


def make_converter(*, max_depth: int = DEFAULT_MAX_DEPTH) -> WireConverter:
    """A new converter that knows pi's data model and nothing registered elsewhere.

    Use one when your code registers message types or records, so that it never changes what
    another library's ``pt.to_json``/``pt.from_json`` do (``default_converter.copy()`` starts
    from everything registered on the default instead, pi_trio's proxy records included).

    Args:
        max_depth: how many arrays/objects a free-form value may nest, on read and on write.

    Raises:
        ValueError: ``max_depth`` is not a positive integer.
    """
    return WireConverter(max_depth=max_depth)


default_converter = make_converter()
"""The process-wide converter behind the module-level functions below."""

converter = default_converter.converter
"""The default converter's ``cattrs.Converter`` (register through the functions below)."""


def from_json(data: Any, cls: type[T] | Any) -> T:
    """Read pi's JSON into ``cls`` by the default converter (:meth:`WireConverter.from_json`).

    Raises:
        pt.WireFormatError: ``data`` does not fit; its message lists every problem as
            ``path: what is wrong``.
    """
    return cast(T, default_converter.from_json(data, cls))


def to_json(obj: Any) -> Any:
    """``obj`` as pi's JSON by the default converter (:meth:`WireConverter.to_json`).

    Raises:
        pt.WireFormatError: a free-form value nests deeper than :data:`DEFAULT_MAX_DEPTH`.
    """
    return default_converter.to_json(obj)


def carries_message(message: object) -> bool:
    """:meth:`WireConverter.carries_message` of the default converter (the one a session
    store reads its log with)."""
    return default_converter.carries_message(message)


def register_message_type(cls: type[Any], role: str | None = None) -> None:
    """Let the default converter carry an application's own message class.

    See :meth:`WireConverter.register_message_type`; code that others import should register
    on its own :func:`make_converter` instead, so as not to change theirs.
    """
    default_converter.register_message_type(cls, role)


def register_records(*classes: type[Any], union: Any = None) -> None:
    """Put attrs classes on the default converter (see :meth:`WireConverter.register_records`)."""
    default_converter.register_records(*classes, union=union)
