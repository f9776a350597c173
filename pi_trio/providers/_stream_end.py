"""A stream's own end marker: a decoder that knows where its stream ends, and what is done
with the rest of the body (read and ignored, briefly)."""

from __future__ import annotations

from typing import Protocol, cast, runtime_checkable

import trio

from ._failure import ProviderFailure
from ._sse_reader import SSEReader

__all__ = ["EndsOnItsOwn", "ends_on_its_own", "read_past_the_end"]


@runtime_checkable
class EndsOnItsOwn(Protocol):
    """A :class:`Decoder` whose stream has an end marker (``[DONE]``, ``message_stop``):
    once ``ended``, ``finish`` is called and what comes after is ignored, as the providers'
    SDKs do (a server that keeps the connection open changes nothing)."""

    @property
    def ended(self) -> bool: ...


_ENDS: dict[type, bool] = {}


def ends_on_its_own(decoder: object) -> bool:
    """Whether ``decoder`` saw its stream's end marker (the Protocol check once per class:
    it costs ~25 µs)."""
    kind = type(decoder)
    has = _ENDS.get(kind)
    if has is None:
        has = _ENDS[kind] = isinstance(decoder, EndsOnItsOwn)
    return has and cast(EndsOnItsOwn, decoder).ended


_AFTER_THE_END = 1.0
"""Seconds a stream past its end marker is given to end (what comes is ignored)."""


async def read_past_the_end(reader: SSEReader) -> None:
    """The rest of a body past its decoder's end marker, read and ignored, for at most
    :data:`_AFTER_THE_END` seconds: a server that ends the body ends it at once (the body's
    iterators finish, none is left for the collector); one that keeps it open, or ends it
    uncleanly, does not change a complete answer."""
    with trio.move_on_after(_AFTER_THE_END):
        try:
            while await reader.next_event() is not None:
                pass
        except ProviderFailure:
            pass
