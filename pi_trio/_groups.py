"""Turning a nursery's group of cancellations back into the one ``Cancelled`` it stands for.

With strict exception groups a nursery whose tasks were all cancelled raises
``BaseExceptionGroup([Cancelled, ...])``. pi_trio's own nurseries catch every ``Exception`` in
their tasks, so such a group carries nothing but the cancellation of an enclosing scope; callers
should see that plain ``Cancelled`` (``except trio.Cancelled`` must work), never a group.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from logging import WARNING

import trio

from ._callbacks import exception_line
from ._logging import log_failure, loop_logger

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


def plain_exception(
    group: BaseExceptionGroup[BaseException], logger: logging.Logger = loop_logger
) -> BaseException:
    """The one exception a pi_trio nursery's group stands for, so that what reaches a caller is
    never a group: the first that is neither a cancellation nor an ``Exception`` (a
    ``KeyboardInterrupt`` from a tool, say: it must be heard); else its cancellation; else its
    first failure.

    A cancellation in a group belongs to a scope outside the nursery, which is ending (an
    abort, a deadline): ordinary failures raised while it unwound (a tool's cleanup, say) do
    not stop it. Each is logged on ``logger`` (WARNING, with its traceback), never dropped
    silently.
    """
    cancelled = only_cancelled(group)
    if cancelled is not None:
        return cancelled
    first_cancelled: trio.Cancelled | None = None
    failures: list[BaseException] = []
    for leaf in _leaves(group):
        if isinstance(leaf, trio.Cancelled):
            first_cancelled = first_cancelled or leaf
        elif not isinstance(leaf, Exception):
            return leaf
        else:
            failures.append(leaf)
    if first_cancelled is None:
        return failures[0]
    for failure in failures:
        log_failure(
            logger, WARNING, failure,
            "%s raised while a cancellation unwound it; the cancellation goes on",
            exception_line(failure),
        )  # fmt: skip
    return first_cancelled


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


def must_propagate(exc: BaseException) -> bool:
    """True for what a callback must never turn into data: a cancellation or a
    ``KeyboardInterrupt`` (alone or inside a group). Anything else a tool raises, down to a
    ``SystemExit`` or a custom ``BaseException``, becomes its error result."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split((trio.Cancelled, KeyboardInterrupt))[0] is not None
    return isinstance(exc, trio.Cancelled | KeyboardInterrupt)
