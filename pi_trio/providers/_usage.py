"""What a response cost: token counts as providers report them, and their price."""

from __future__ import annotations

from typing import Any

from ..messages import Usage
from ..models import Model

__all__ = ["compute_cost", "token_count"]

_MOST_TOKENS = 2**53  # beyond any real count, and what a float still holds exactly


def token_count(raw: Any, key: str) -> int:
    """A token count a provider reported in ``raw[key]``: a non-negative whole number, else
    0 (a string, a negative or huge number, NaN: a server's mistake must not turn a complete
    answer into an error, nor reach the cost)."""
    value = raw.get(key) if isinstance(raw, dict) else None
    if type(value) is int:
        return value if 0 <= value < _MOST_TOKENS else 0
    if type(value) is float and 0 <= value < _MOST_TOKENS:  # NaN fails both comparisons
        return int(value)
    return 0


def compute_cost(model: Model, usage: Usage) -> Usage:
    """Fill ``usage.cost`` from ``model.cost`` (dollars per million tokens)."""
    rates = model.cost
    cost = usage.cost
    cost.input = rates.input * usage.input / 1_000_000
    cost.output = rates.output * usage.output / 1_000_000
    cost.cache_read = rates.cache_read * usage.cache_read / 1_000_000
    cost.cache_write = rates.cache_write * usage.cache_write / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return usage
