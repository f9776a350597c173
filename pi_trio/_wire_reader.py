"""How a record of pi's JSON is read on the common path: generated from its attrs fields.

Part of :mod:`pi_trio.wire`. ``from_json`` checks everything and reports every problem (cattrs'
structure functions with pi_trio's hooks), at ~20 µs per assistant message. Most JSON it reads
is plain and well-formed (a session log pi_trio wrote, a pi process's events), so
:func:`pi_trio.wire.WireConverter.from_json` first tries the reader generated here for the
class: exact types only (a ``str`` where a string belongs, an ``int`` where an integer
belongs...), no key it does not know, each value checked as the hook would check it. Anything
else raises :class:`Miss` (or whatever a value's own hook raises), and the checked path reads
the JSON again and reports what is wrong. When both accept a value they build equal objects
(tests/test_wire_reader.py reads every recorded fixture both ways).

:class:`RecordConverter` (the cattrs converter of every ``WireConverter``) holds how each
record and union was registered; the readers are generated at their first use, when the whole
data model is registered, and dropped when a registration changes.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin

import attrs
import cattrs

from ._wire_codegen import NONE, Generated, is_union
from ._wire_values import camel

__all__ = ["Miss", "Reader", "Readers", "RecordConverter", "readers_of"]

Reader = Callable[[Any], Any]
"""An object from its JSON; raises when the JSON is not of the plain shape it reads."""


class Miss(Exception):
    """The fast reader does not take this JSON: the checked path reads it."""


def _checked(conv: cattrs.Converter, cls: type[Any]) -> Reader:
    """``cls``'s own structure hook (its reading written by hand)."""
    hook = conv.get_structure_hook(cls)
    return lambda data: hook(data, cls)


def _miss() -> Any:
    raise Miss


@attrs.frozen
class _RecordSpec:
    tag: tuple[str, str] | None
    kept: str | None
    local: frozenset[str]
    order: int  # when it was registered: a record's checked hook holds its fields' hooks of then


@attrs.frozen
class _UnionSpec:
    tag_key: str
    choices: Callable[[], Mapping[str, type[Any]]]


class Readers:
    """How one converter's records and unions were registered, and their generated readers."""

    def __init__(self, conv: cattrs.Converter) -> None:
        self._conv = conv
        self._records: dict[type[Any], _RecordSpec] = {}
        self._order = itertools.count()
        self._unions: dict[Any, _UnionSpec] = {}
        self.generated: dict[Any, Reader | None] = {}
        """The readers generated so far (None: being generated): ``generated.get(type_)``
        first, then :meth:`reader`."""

    def add_record(
        self, cls: type[Any], tag: tuple[str, str] | None, kept: str | None, local: frozenset[str]
    ) -> None:
        """``cls`` was registered (see :func:`register_record`)."""
        self._records[cls] = _RecordSpec(tag, kept, local, next(self._order))
        self.generated.clear()

    def add_union(
        self, union: Any, tag_key: str, choices: Callable[[], Mapping[str, type[Any]]]
    ) -> None:
        """``union`` is read as the class ``choices()[data[tag_key]]``."""
        self._unions[union] = _UnionSpec(tag_key, choices)
        self.generated.clear()

    def reader(self, type_: Any) -> Reader | None:
        """The generated reader of a registered record or union, or None."""
        try:
            return self.generated[type_]
        except KeyError:
            pass
        except TypeError:  # an unhashable type argument: never registered
            return None
        if type_ not in self._records and type_ not in self._unions:
            return None
        self.generated[type_] = None  # while generating: a self-nesting type reads checked
        made = _Source(self._conv, self).reader(type_)
        self.generated[type_] = made
        return made

    def record(self, cls: type[Any]) -> _RecordSpec | None:
        return self._records.get(cls)

    def union(self, union: Any) -> _UnionSpec | None:
        try:
            return self._unions.get(union)
        except TypeError:
            return None


def _positional(cls: type[Any], names: list[str]) -> bool:
    """Whether ``cls(*values)`` passes values to the parameters ``names`` (its first ones)."""
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    leading = [p.name for p in parameters[: len(names)] if p.kind in positional]
    return leading == names


class RecordConverter(cattrs.Converter):
    """A cattrs converter that also keeps how its records and unions were registered, for
    the readers generated from them (:attr:`readers`)."""

    __slots__ = ("readers",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.readers = Readers(self)


def readers_of(conv: cattrs.Converter) -> Readers:
    """The readers of ``conv`` (a converter of another kind gets a table of its own, unused)."""
    return conv.readers if isinstance(conv, RecordConverter) else Readers(conv)


class _Source(Generated):
    """The globals of a generated reader, and the statements that read its values."""

    def __init__(self, conv: cattrs.Converter, readers: Readers) -> None:
        super().__init__({"Miss": Miss, "_miss": _miss, "_isfinite": math.isfinite})
        self.conv = conv
        self.readers = readers
        self.registered: int | None = None  # when the record being generated was registered

    def reader(self, type_: Any) -> Reader:
        spec = self.readers.record(type_)
        if spec is not None:
            return self._record(type_, spec)
        union = self.readers.union(type_)
        assert union is not None
        by_tag, learn = self._dispatch(union)
        key = union.tag_key

        def read(data: Any) -> Any:
            return (by_tag.get(data[key]) or learn(data))(data)

        return read

    def _dispatch(self, union: _UnionSpec) -> tuple[dict[Any, Reader], Callable[[Any], Reader]]:
        """``(by_tag, learn)``: the reader of a union's value is ``by_tag.get(tag)`` or, the
        first time a tag is seen, ``learn(value)`` (which raises :class:`Miss` when no
        registered record has the tag)."""
        readers, choices, key, conv = self.readers, union.choices, union.tag_key, self.conv
        by_tag: dict[Any, Reader] = {}  # dropped with this reader when a registration changes

        def learn(data: Any) -> Reader:
            tag = data[key]
            cls = choices().get(tag) if tag.__class__ is str else None
            if cls is None:
                raise Miss
            found = readers.reader(cls) or _checked(conv, cls)  # a record read by hand
            by_tag[tag] = found
            return found

        return by_tag, learn

    def _union_value(self, union: _UnionSpec, var: str) -> str:
        by_tag, learn = self._dispatch(union)
        tags, learn_name = self.name(by_tag, "by_tag"), self.name(learn, "learn")
        return f"({tags}.get({var}[{union.tag_key!r}]) or {learn_name}({var}))({var})"

    def value(self, type_: Any, var: str) -> str:
        """The expression reading ``var`` (a local name) declared as ``type_``."""
        if type_ is str:
            return f"({var} if {var}.__class__ is str else _miss())"
        if type_ is bool:
            return f"({var} if {var}.__class__ is bool else _miss())"
        if type_ is int:
            return f"({var} if {var}.__class__ is int else _miss())"
        if type_ is float:
            finite = f"({var}.__class__ is float and _isfinite({var}))"
            return f"({var} if {var}.__class__ is int or {finite} else _miss())"
        if get_origin(type_) is Literal and all(a.__class__ is str for a in get_args(type_)):
            allowed = self.name(frozenset(get_args(type_)), "allowed")
            return f"({var} if {var}.__class__ is str and {var} in {allowed} else _miss())"
        if is_union(type_) and self.readers.union(type_) is None:
            members = get_args(type_)
            others = [m for m in members if m is not NONE]
            if len(others) == 1:
                inner = self.value(others[0], var)
                return f"(None if {var} is None else {inner})" if NONE in members else inner
            if len(others) == 2 and str in others:  # a string, or one other kind of value
                (other,) = (m for m in others if m is not str)
                inner = self.value(other, var)
                plain = f"({var} if {var}.__class__ is str else {inner})"
                return f"(None if {var} is None else {plain})" if NONE in members else plain
        if get_origin(type_) is list and len(get_args(type_)) == 1:
            item = self.fresh("item")
            read = self.value(get_args(type_)[0], item)
            return f"([{read} for {item} in {var}] if {var}.__class__ is list else _miss())"
        union = self.readers.union(type_)
        if union is not None:
            return self._union_value(union, var)
        held = self.readers.record(type_)
        if held is not None and self.registered is not None and held.order > self.registered:
            return "_miss()"  # registered after the record holding it, whose checked hook
            # reads it the way it was registered then: the checked path decides
        found = self.readers.reader(type_)
        if found is not None:
            return f"{self.name(found, 'read')}({var})"
        hook = self.conv.get_structure_hook(type_)  # checks as the checked path does
        return f"{self.name(hook, 'hook')}({var}, {self.name(type_, 'type')})"

    def _record(self, cls: type[Any], spec: _RecordSpec) -> Reader:
        self.registered = spec.order
        attrs.resolve_types(cls)
        fields = [f for f in attrs.fields(cls) if f.name not in spec.local and f.init]
        known = {camel(f.name) for f in fields} | ({spec.tag[0]} if spec.tag else set())
        lines = [
            f"def read_{cls.__name__}(d):",
            "    if d.__class__ is not dict:",
            "        raise Miss",
            f"    if not d.keys() <= {self.name(frozenset(known), 'known')}:",
            "        raise Miss  # kept keys: the checked path keeps them",
        ]
        arguments = []
        for field in fields:
            key, name = camel(field.name), f"f_{field.name}"
            read = self.value(field.type, "v")
            default = field.default
            if default is attrs.NOTHING:
                lines += [f"    v = d[{key!r}]", f"    {name} = {read}"]
            else:
                if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                    absent = f"{self.name(default.factory, 'factory')}()"
                    if default.takes_self:  # not in pi's data model: the checked path
                        absent = "_miss()"
                else:
                    absent = self.name(default, "default")
                lines += [
                    f"    v = d.get({key!r}, _miss)",  # _miss: a marker no JSON value is
                    f"    {name} = {absent} if v is _miss else {read}",
                ]
            arguments.append(f"{field.alias}={name}")
        if _positional(cls, [field.alias for field in fields]):  # a call ~3x cheaper
            arguments = [argument.split("=", 1)[1] for argument in arguments]
        lines.append(f"    return {self.name(cls, 'cls')}({', '.join(arguments)})")
        filename = f"<pi_trio.wire reader of {cls.__module__}.{cls.__qualname__}>"
        reader: Reader = self.compile(f"read_{cls.__name__}", lines, filename)
        return reader
