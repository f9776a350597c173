"""Text that a block builds from streamed pieces, joined lazily on read (amortised O(1) per
piece): the machinery behind :class:`pi_trio.TextContent` and :class:`pi_trio.ThinkingContent`."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import attrs

__all__ = ["Accumulating", "streamed"]


def _no_refcount(obj: object) -> int:
    return 1 << 30  # an interpreter without refcounts: a piece list is never dropped


_getrefcount: Callable[[object], int] = getattr(sys, "getrefcount", _no_refcount)


class Accumulating:
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


def streamed(cls: type[Any], field: str) -> None:
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


@attrs.define(init=False, eq=False, weakref_slot=False, getstate_setstate=False)
class _Probe(Accumulating):
    text: str


streamed(_Probe, "text")


def _unlent_refs() -> int:
    """The reference count ``_keep`` sees for a piece list nothing else holds, measured the
    way ``_keep`` measures it (not assumed: it depends on how the interpreter counts)."""
    block = object.__new__(_Probe)
    block._start("")
    block.append("")
    return _getrefcount(block._parts)


# without refcounts (another interpreter) no count matches: piece lists are never dropped
_UNLENT = _unlent_refs() if _getrefcount is not _no_refcount else -1
