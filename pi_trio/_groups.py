"""Turning a nursery's group of cancellations back into the one ``Cancelled`` it stands for.

With strict exception groups a nursery whose tasks were all cancelled raises
``BaseExceptionGroup([Cancelled, ...])``. pi_trio's own nurseries catch every ``Exception`` in
their tasks, so such a group carries nothing but the cancellation of an enclosing scope; callers
should see that plain ``Cancelled`` (``except trio.Cancelled`` must work), never a group.
"""

from __future__ import annotations

import trio

__all__ = ["must_propagate", "only_cancelled", "plain_exception"]


def only_cancelled(group: BaseExceptionGroup[BaseException]) -> trio.Cancelled | None:
    """The first ``Cancelled`` of ``group`` (depth first) when that is all it holds, else None.

    A walk over the leaves, not ``group.split()``: an abort passes here once per nursery it
    unwinds, and ``split`` copies the group to answer a yes/no question."""
    first: trio.Cancelled | None = None
    for exc in group.exceptions:
        leaf: trio.Cancelled | None
        if isinstance(exc, BaseExceptionGroup):
            leaf = only_cancelled(exc)
            if leaf is None:
                return None
        elif isinstance(exc, trio.Cancelled):
            leaf = exc
        else:
            return None
        if first is None:
            first = leaf
    return first


def plain_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a pi_trio nursery's group stands for: its cancellation, else the
    first other ``BaseException`` in it (a ``KeyboardInterrupt`` from a tool, say), so that
    what reaches a caller is never a group."""
    cancelled = only_cancelled(group)
    if cancelled is not None:
        return cancelled
    rest = group.split(trio.Cancelled)[1]
    leaf: BaseException = rest if rest is not None else group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


def must_propagate(exc: BaseException) -> bool:
    """True for what a callback must never turn into data: a cancellation or a
    ``KeyboardInterrupt`` (alone or inside a group). Anything else a tool raises, down to a
    ``SystemExit`` or a custom ``BaseException``, becomes its error result."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split((trio.Cancelled, KeyboardInterrupt))[0] is not None
    return isinstance(exc, trio.Cancelled | KeyboardInterrupt)
