"""What the generated writers and readers of :mod:`pi_trio.wire` share: the globals their
source refers to, fresh names for them, and compiling the source into a function."""

from __future__ import annotations

import itertools
import types
from collections.abc import Callable
from typing import Any, Union, get_origin

__all__ = ["NONE", "Generated", "is_union"]

NONE = type(None)

_names = itertools.count()


def is_union(type_: Any) -> bool:
    """Whether ``type_`` is a union (``X | Y``, ``Optional[X]``, ``Union[...]``)."""
    return get_origin(type_) in (Union, types.UnionType)


class Generated:
    """The globals of one generated function, filled while its source is written."""

    def __init__(self, globs: dict[str, Any]) -> None:
        self.globs = globs

    def name(self, value: Any, hint: str) -> str:
        """A fresh global name bound to ``value``, for the source to refer to it."""
        name = self.fresh(hint)
        self.globs[name] = value
        return name

    @staticmethod
    def fresh(hint: str) -> str:
        """A name no other generated source uses (for its locals)."""
        return f"_{hint}_{next(_names)}"

    def compile(self, name: str, lines: list[str], filename: str) -> Callable[..., Any]:
        """The function ``name`` that ``lines`` define, with these globals."""
        namespace: dict[str, Any] = {}
        exec(compile("\n".join(lines), filename, "exec"), self.globs, namespace)
        function: Callable[..., Any] = namespace[name]
        return function
