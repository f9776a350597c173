"""How a record of pi's JSON is written: one function per attrs class, generated from its fields.

Part of :mod:`pi_trio.wire`. :func:`record_writer` compiles, for one class, a function that
builds the record's JSON object in one dict literal: the tag first, then the fields without a
default to omit, then those omitted while at their default (in field order, as cattrs writes
them), then the kept keys (``extra``). A field's value is written by what cattrs would call for
its declared type, with the common cases inlined: a value cattrs passes through as is (a string,
a number, a ``Literal``; also when optional) is read straight off the instance, and a list of
records is one comprehension that dispatches each item on its class.

:func:`plain_record_writer` is the same record written the plain way (cattrs'
``make_dict_unstructure_fn`` with the tag and the kept keys added around it), kept beside it so
that one test (tests/test_wire_writer.py) can compare the two on every recorded fixture: the
generated form is what every ``pt.to_json`` and every session log entry goes through, and
writing a message that way costs about half of the plain one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, get_args, get_origin

import attrs
import cattrs
from cattrs.fns import identity
from cattrs.gen import make_dict_unstructure_fn, override

from ._wire_codegen import NONE, Generated, is_union
from ._wire_kept import write_kept
from ._wire_values import camel

__all__ = ["Writer", "plain_record_writer", "record_writer"]

Writer = Callable[[Any], dict[str, Any]]
"""A record's JSON object from an instance."""


def _is_records(members: tuple[Any, ...]) -> bool:
    return bool(members) and all(isinstance(m, type) and attrs.has(m) for m in members)


class _Source(Generated):
    """The globals of a generated function, and the expressions that write its values."""

    def __init__(self, conv: cattrs.Converter) -> None:
        super().__init__({"_unstructure": conv.unstructure})
        self.conv = conv

    def value(self, type_: Any, var: str) -> str:
        """The expression writing ``var`` (a name or an attribute) declared as ``type_``."""
        handler = self.conv.get_unstructure_hook(type_, cache_result=False)
        if handler is identity:
            return var
        if is_union(type_):
            written = self._union(type_, var)
            if written is not None:
                return written
        elif get_origin(type_) is list and len(get_args(type_)) == 1:
            (item_type,) = get_args(type_)
            item_var = self.fresh("item")
            item = self.value(item_type, item_var)
            if item != item_var:
                return f"[{item} for {item_var} in {var}]"
        return f"{self.name(handler, 'hook')}({var})"

    def _union(self, type_: Any, var: str) -> str | None:
        """A union's expression, written as cattrs writes it: an optional value by its one
        type's hook; else values cattrs passes through as they are (a ``str``, an ``int``...)
        at once, a list of the union's one list type by its comprehension, a record by its
        class's hook, and anything else (a ``str`` subclass, an enum...) by the converter."""
        members = get_args(type_)
        plain = tuple(m for m in members if m is NONE or self._is_identity(m))
        others = tuple(m for m in members if m not in plain)
        if not others:
            return var
        if plain == (NONE,) and len(others) == 1:
            return f"(None if {var} is None else {self.value(others[0], var)})"
        if _is_records(others):  # dispatched on the value's class, whatever it is
            hooks, learn = _dispatch(self.conv, others)
            hooks_name, learn_name = self.name(hooks, "hooks"), self.name(learn, "learn")
            cls = f"{var}.__class__"
            written = f"({hooks_name}.get({cls}) or {learn_name}({cls}))({var})"
        elif len(others) == 1 and get_origin(others[0]) is list:
            items = self.value(others[0], var)
            written = f"({items} if {var}.__class__ is list else _unstructure({var}))"
        else:
            return None
        if not plain:
            return written
        classes = self.name(frozenset(plain), "plain")
        return f"({var} if {var}.__class__ in {classes} else {written})"

    def _is_identity(self, type_: Any) -> bool:
        hook = self.conv.get_unstructure_hook(type_, cache_result=False)
        return hook is identity and isinstance(type_, type)


def _dispatch(
    conv: cattrs.Converter, members: tuple[type[Any], ...]
) -> tuple[dict[type[Any], Callable[[Any], Any]], Callable[[type[Any]], Callable[[Any], Any]]]:
    """``(hooks, learn)`` for writing a value of a union of records by its class's hook:
    ``hooks.get(cls) or learn(cls)``. ``learn`` looks a member's hook up once, at its first
    use (after the whole data model is registered); any other class is looked up each time."""
    hooks: dict[type[Any], Callable[[Any], Any]] = {}
    known = frozenset(members)

    def learn(cls: type[Any]) -> Callable[[Any], Any]:
        hook = conv.get_unstructure_hook(cls)
        if cls in known:
            hooks[cls] = hook
        return hook

    return hooks, learn


def _on_wire(cls: type[Any], local: frozenset[str]) -> list[attrs.Attribute[Any]]:
    """The fields written, in order: not local (NOT_ON_WIRE, ``extra``), set by ``__init__``."""
    return [f for f in attrs.fields(cls) if f.name not in local and f.init]


def _known(cls: type[Any], tag: tuple[str, str] | None, local: frozenset[str]) -> frozenset[str]:
    """The keys of the record's own (never written over by a kept key)."""
    known = frozenset(camel(f.name) for f in attrs.fields(cls) if f.name not in local)
    return known | {tag[0]} if tag is not None else known


def record_writer(
    conv: cattrs.Converter,
    cls: type[Any],
    tag: tuple[str, str] | None,
    omit_if_default: frozenset[str],
    kept: str | None,
    local: frozenset[str],
) -> Writer:
    """The generated writer of ``cls`` (the arguments are :func:`register_record`'s).

    Args:
        conv: the converter whose hooks write the fields' values (they must be registered).
        cls: an attrs class.
        tag: ``(key, value)`` written first, or None.
        omit_if_default: the fields left out while equal to their default.
        kept: the field holding the keys it does not model (written last), or None.
        local: the fields never written (``kept`` among them).
    """
    attrs.resolve_types(cls)
    source = _Source(conv)
    always: list[str] = []
    omitted: list[str] = []
    if tag is not None:
        always.append(f"{tag[0]!r}: {tag[1]!r},")
    for field in _on_wire(cls, local):
        key, attr = camel(field.name), f"o.{field.name}"
        default = field.default
        if field.name not in omit_if_default or default is attrs.NOTHING:
            always.append(f"{key!r}: {source.value(field.type, attr)},")
            continue
        if default is None:
            test = "v is not None"
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            factory = source.name(default.factory, "default")
            test = f"v != {factory}({'o' if default.takes_self else ''})"
        else:
            test = f"v != {source.name(default, 'default')}"
        written = source.value(field.type, "v")
        omitted += [f"v = {attr}", f"if {test}:", f"    out[{key!r}] = {written}"]
    if kept is not None:
        source.globs.update(_write_kept=write_kept, _known=_known(cls, tag, local))
        omitted += [f"x = o.{kept}", "if x:", "    _write_kept(out, x, _known, _unstructure)"]
    lines = [
        f"def write_{cls.__name__}(o):",
        "    out = {",
        *(f"        {line}" for line in always),
        "    }",
        *(f"    {line}" for line in omitted),
        "    return out",
    ]
    filename = f"<pi_trio.wire writer of {cls.__module__}.{cls.__qualname__}>"
    writer: Writer = source.compile(f"write_{cls.__name__}", lines, filename)
    return writer


def plain_record_writer(
    conv: cattrs.Converter,
    cls: type[Any],
    tag: tuple[str, str] | None,
    omit_if_default: frozenset[str],
    kept: str | None,
    local: frozenset[str],
) -> Writer:
    """The plain form of :func:`record_writer` (cattrs' generated function, wrapped): what the
    generated one must equal."""
    overrides = {
        f.name: override(omit=True)
        if f.name in local
        else override(rename=camel(f.name), omit_if_default=f.name in omit_if_default)
        for f in attrs.fields(cls)
    }
    untagged: Writer = make_dict_unstructure_fn(cls, conv, **overrides)  # type: ignore[arg-type]
    known = _known(cls, tag, local)
    write_free: Callable[[Any, Any], Any] = conv.unstructure

    def write(obj: Any) -> dict[str, Any]:
        out = untagged(obj) if tag is None else {tag[0]: tag[1], **untagged(obj)}
        if kept is not None:
            extra: Mapping[str, Any] | None = getattr(obj, kept)
            write_kept(out, extra, known, write_free)
        return out

    return write
