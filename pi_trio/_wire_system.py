"""pi-ai 1.6's SystemMessage on a cattrs converter: part of :mod:`pi_trio.wire`.

Its JSON differs from a plain record's: ``content`` is a string or text blocks, ``sections``
maps names to texts (a null removes one), ``toolsRemoved`` holds ``{"name": ...}`` references
(read as names), and the tool lists are left out while empty, as pi writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import cattrs
from cattrs.errors import ClassValidationError

from ._wire_kept import kept_into, noted, write_kept
from ._wire_values import Invalid, describe
from .messages import SystemMessage, TextContent, Tool

__all__ = ["register_system_message"]


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
        write_kept(out, message.extra, known, unstructure_as)
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
                    errors.append(noted(KeyError(key), key))
                continue
            try:
                kwargs[attributes.get(key, key)] = read(data[key])
            except Exception as exc:
                errors.append(noted(exc, key))
        kept_into(kwargs, errors, data, known, structure_as, SystemMessage)
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
