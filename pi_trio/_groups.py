"""Turning a nursery's group of cancellations back into the one ``Cancelled`` it stands for.

With strict exception groups a nursery whose tasks were all cancelled raises
``BaseExceptionGroup([Cancelled, ...])``. pi_trio's own nurseries catch every ``Exception`` in
their tasks, so such a group carries nothing but the cancellation of an enclosing scope; callers
should see that plain ``Cancelled`` (``except trio.Cancelled`` must work), never a group.
"""

from __future__ import annotations

import trio

__all__ = ["only_cancelled"]


def only_cancelled(group: BaseExceptionGroup[BaseException]) -> trio.Cancelled | None:
    """The first ``Cancelled`` of ``group`` when that is all it holds, else None."""
    cancelled, rest = group.split(trio.Cancelled)
    if rest is not None or cancelled is None:
        return None
    leaf: BaseException = cancelled
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    assert isinstance(leaf, trio.Cancelled)
    return leaf
