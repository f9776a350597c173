"""Calling the application's callbacks: the one rule every layer shares.

A hook or a listener may be a plain function or an async one (a tool's ``prepare_arguments``
is a plain one); the layers call it through :func:`call_maybe_async`, and describe what an
exception says with :func:`exception_text`. Shared by ``pi_trio.tools``, ``pi_trio.loop`` and
``pi_trio.agent`` (a top-level private module, so no layer imports another's private names).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from ._errors import PiError

__all__ = [
    "call_maybe_async",
    "exception_line",
    "exception_text",
    "hook_answer",
    "is_async_callable",
    "is_awaitable",
    "is_generator_function",
]

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


def _unwrapped(fn: Any) -> Any:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` (through any ``functools.partial``) gives a coroutine."""
    fn = _unwrapped(fn)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def is_generator_function(fn: Any) -> bool:
    """Whether ``fn`` (through any ``functools.partial``), or its type's ``__call__``, is a
    generator or an async generator function: a tool of one would run without a result."""
    fn = _unwrapped(fn)
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - an object whose __call__ generates
    return any(inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f) for f in (fn, call))


def exception_text(exc: BaseException) -> str:
    """What the model (or the transcript) is told about an exception.

    The rule: the text alone when it says what happened, the type too when the text needs it.

    * a plain ``Exception("boom")`` or ``RuntimeError("boom")``, and pi_trio's own errors
      (``PiError``: their texts are written to be read, some are pi's exact texts): ``boom``,
      as pi reports a JavaScript ``Error`` by its message;
    * any other type, the way Python's traceback ends: ``KeyError: 'missing'``,
      ``ZeroDivisionError: division by zero``, ``ValueError: ...``;
    * an exception without text: its type (``TimeoutError``).
    """
    text = str(exc)
    cls = type(exc)
    if not text:
        return cls.__name__
    if cls is Exception or cls is RuntimeError or isinstance(exc, PiError):
        return text
    return f"{cls.__name__}: {text}"


def exception_line(exc: BaseException) -> str:
    """:func:`exception_text`'s first line: for a log line that repeats a failure already
    logged in full (a database's own text may go on with the query)."""
    return exception_text(exc).partition("\n")[0]


def hook_answer(answer: Any, expected: type[Any], hook: str) -> Any:
    """``answer``, what the hook ``hook`` returned, when it is None or an ``expected``;
    anything else is the hook's bug, raised here as a ``TypeError`` naming the hook and what
    it returns, where the hook's own failure is handled (not later, as an AttributeError deep
    in the loop)."""
    if answer is None or isinstance(answer, expected):
        return answer
    raise TypeError(
        f"{hook} returned {type(answer).__name__}, expected pt.{expected.__name__} or None"
    )
