"""Calling the application's callbacks: the one rule every layer shares.

A hook, a listener or a tool's ``prepare_arguments`` may be a plain function or an async one;
the layers call it through :func:`call_maybe_async`, and describe what an exception says with
:func:`exception_text`. Shared by ``pi_trio.tools``, ``pi_trio.loop`` and ``pi_trio.agent`` (a
top-level private module, so no layer imports another's private names).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["call_maybe_async", "exception_text", "is_awaitable"]

_PLAIN = frozenset({type(None), bool, int, float, str, list, tuple, dict})


async def call_maybe_async(callback: Callable[..., Any], *args: Any) -> Any:
    """``callback(*args)``, awaiting its result when it returns an awaitable.

    A checkpoint only when ``callback`` awaits. On cancellation, whatever the callback was
    doing is interrupted and ``Cancelled`` propagates.
    """
    value = callback(*args)
    if is_awaitable(value):
        value = await value
    return value


def is_awaitable(value: object) -> bool:
    """``inspect.isawaitable``, with a fast answer for the plain values hooks usually return
    (``None``, a bool, a list): for the hot paths that inline :func:`call_maybe_async`."""
    return type(value) not in _PLAIN and inspect.isawaitable(value)


def exception_text(exc: BaseException) -> str:
    """What the model (or the transcript) is told about an exception: its text, else its type."""
    return str(exc) or type(exc).__name__
