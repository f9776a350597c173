"""What a record of pi's JSON keeps beyond its own fields: part of :mod:`pi_trio.wire`.

A record with an ``extra`` field keeps the keys it does not model (a newer pi's fields) as read,
each checked as free-form JSON, and writes them back after its own keys, never over one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cattrs.errors import AttributeValidationNote, ClassValidationError

from ._wire_values import Invalid

__all__ = ["kept_into", "noted", "read_extra", "write_kept"]


def noted(exc: Exception, name: str) -> Exception:
    """Mark ``exc`` as being about the key ``name``, the way cattrs marks attributes."""
    note = AttributeValidationNote(f"Structuring @ attribute {name}", name, object)
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
    return exc


def write_kept(
    out: dict[str, Any],
    extra: Mapping[str, Any] | None,
    known: frozenset[str],
    write_free: Callable[[Any, Any], Any],
) -> None:
    """Add a record's kept keys to its JSON ``out``: never over a modelled key (or the tag)."""
    if extra:
        for name, value in extra.items():
            if name not in known:
                out[name] = write_free(value, Any)


def kept_into(
    kwargs: dict[str, Any],
    errors: list[Exception],
    data: Mapping[str, Any],
    known: frozenset[str],
    read_free: Callable[[Any, Any], Any],
    cls: type[Any],
) -> None:
    """``kwargs["extra"]``: the keys of ``data`` not in ``known`` (none: left out); each
    problem with them goes to ``errors``."""
    if not known.issuperset(data):
        try:
            kwargs["extra"] = read_extra(data, known, read_free, cls)
        except ClassValidationError as group:
            errors.extend(group.exceptions)


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
            errors.append(noted(exc, name))
    if errors:
        raise ClassValidationError(f"While structuring {cls.__name__}", errors, cls)
    return extra
