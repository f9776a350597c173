"""pi_trio._groups: a nursery's group of cancellations back to the one Cancelled it stands for."""

from __future__ import annotations

import pytest
import trio

from pi_trio._groups import must_propagate, only_cancelled, plain_exception


async def _cancelled() -> trio.Cancelled:
    """A real ``Cancelled``, as Trio raises it (its constructor is not public)."""
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as exc:
            return exc
    raise AssertionError("not cancelled")


async def test_only_cancelled_is_the_first_leaf_depth_first() -> None:
    a, b, c = await _cancelled(), await _cancelled(), await _cancelled()
    assert only_cancelled(BaseExceptionGroup("", [a, b])) is a
    # depth first: the nested group's leaf comes before the later sibling
    assert only_cancelled(BaseExceptionGroup("", [BaseExceptionGroup("", [b]), a, c])) is b
    assert only_cancelled(BaseExceptionGroup("", [BaseExceptionGroup("", [c, a])])) is c


async def test_anything_but_cancelled_means_none() -> None:
    a = await _cancelled()
    error = ValueError("boom")
    assert only_cancelled(BaseExceptionGroup("", [a, error])) is None
    assert only_cancelled(BaseExceptionGroup("", [error, a])) is None
    nested = BaseExceptionGroup("", [a, BaseExceptionGroup("", [a, KeyboardInterrupt()])])
    assert only_cancelled(nested) is None


async def test_plain_exception_prefers_cancelled_else_the_first_other() -> None:
    a = await _cancelled()
    interrupt = KeyboardInterrupt()
    assert plain_exception(BaseExceptionGroup("", [a, a])) is a
    assert plain_exception(BaseExceptionGroup("", [a, interrupt])) is interrupt
    inner = BaseExceptionGroup("", [interrupt])
    assert plain_exception(BaseExceptionGroup("", [a, inner])) is interrupt


@pytest.mark.parametrize("kind", ["cancelled", "interrupt", "group", "exit", "error"])
async def test_must_propagate(kind: str) -> None:
    a = await _cancelled()
    exc: BaseException = {
        "cancelled": a,
        "interrupt": KeyboardInterrupt(),
        "group": BaseExceptionGroup("", [ValueError(), a]),
        "exit": SystemExit(1),
        "error": ValueError(),
    }[kind]
    assert must_propagate(exc) is (kind in ("cancelled", "interrupt", "group"))
