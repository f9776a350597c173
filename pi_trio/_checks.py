"""Validators for the settings records (``pt.AgentSettings``, ``pt.AgentLoopConfig``): each
refuses a bad value where it is set, naming the setting, what it got and what it takes.

Shared by ``pi_trio.loop`` and ``pi_trio.agent`` (a top-level private module, so no layer
imports another's private names). Each is an attrs validator ``(instance, attribute, value)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

__all__ = [
    "callable_or_none",
    "count_or_none",
    "hook_field",
    "instance_of",
    "non_negative_count",
    "non_negative_seconds",
    "one_of",
    "positive_or_none",
    "str_or_none",
]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def describe(value: object) -> str:
    """How an error message shows a value it refuses: ``0``, ``'x'`` (cut at 60 characters),
    ``a list``."""
    if isinstance(value, str) and len(value) > 60:
        return repr(value[:57] + "...")
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    return f"a {type(value).__name__}"


def callable_or_none(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A hook: a function, an async function, or None.

    Raises:
        TypeError: anything else.
    """
    if value is not None and not callable(value):
        raise TypeError(
            f"{attribute.name} must be a function (or an async function) or None, "
            f"got {describe(value)}"
        )


def str_or_none(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Raises: TypeError: not a str or None."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, got {describe(value)}")


def one_of(*choices: str) -> Validator:
    """One of the given strings.

    Raises:
        ValueError: any other value.
    """
    shown = ", ".join(f'"{choice}"' for choice in choices)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            raise ValueError(f"{attribute.name} must be one of {shown}, got {describe(value)}")

    return check


def instance_of(cls: type, what: str) -> Validator:
    """An instance of ``cls`` (described as ``what``, e.g. "a pt.StreamOptions").

    Raises:
        TypeError: anything else.
    """

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, cls):
            raise TypeError(f"{attribute.name} must be {what}, got {describe(value)}")

    return check


def _number(attribute: attrs.Attribute[Any], value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{attribute.name} must be {what}, got {describe(value)}")


def count_or_none(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An int >= 1, or None (no limit).

    Raises:
        TypeError: not an int (a bool neither).
        ValueError: below 1.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an int >= 1 or None, got {describe(value)}")
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1 or None, got {value!r}")


def non_negative_count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An int >= 0.

    Raises:
        TypeError: not an int (a bool neither).
        ValueError: below 0.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an int >= 0, got {describe(value)}")
    if value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")


def positive_or_none(unit: str) -> Validator:
    """A number > 0 of ``unit`` ("seconds", "dollars"), or None (no limit).

    Raises:
        TypeError: not a number.
        ValueError: not above 0 (or NaN).
    """

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        _number(attribute, value, f"a number of {unit} > 0 or None")
        if not value > 0:
            raise ValueError(f"{attribute.name} must be > 0 {unit} or None, got {value!r}")

    return check


def non_negative_seconds(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A number of seconds >= 0 (``math.inf`` allowed).

    Raises:
        TypeError: not a number.
        ValueError: below 0 (or NaN).
    """
    _number(attribute, value, "a number of seconds >= 0")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{attribute.name} must be a number of seconds >= 0, got {value!r}")


def hook_field() -> Any:
    """A keyword-only attrs field for a hook: a function, an async function, or None."""
    return attrs.field(default=None, kw_only=True, validator=callable_or_none)
