"""Example tools for ``chat``, ``rpc`` and ``serve``: the time, arithmetic, reading a file.

They are small on purpose and safe to hand to any model: the calculator evaluates arithmetic
only (no names, no calls) on numbers of bounded size (so that no expression can hold the
process for long: ``((9**999)**999)**999`` is an error result, at once), and ``read_file``
reads text files under the working directory.
"""

from __future__ import annotations

import ast
import datetime
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import trio

from ..tools import AgentTool, tool

__all__ = ["calculate", "clock", "example_tools", "read_file"]

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
MAX_FILE_BYTES = 64 * 1024
MAX_EXPONENT = 1000
MAX_INT_BITS = 10_000
"""The largest integer the calculator computes with: about 3,000 decimal digits. Every operand
and result is checked, and a power is refused before it is computed, so each step is cheap."""

_ONLY_ARITHMETIC = "only numbers and + - * / // % ** ( ) are allowed"
_TOO_LARGE = (
    f"number too large: the calculator works with at most {MAX_INT_BITS} bits (about 3,000 digits)"
)


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError(_TOO_LARGE)
    return value


def _power(left: Any, right: Any) -> Any:
    if abs(right) > MAX_EXPONENT:
        raise ValueError(f"exponent too large: at most {MAX_EXPONENT}")
    exact = isinstance(left, int) and isinstance(right, int) and right > 0
    if exact and (abs(left).bit_length() - 1) * right > MAX_INT_BITS:  # a lower bound
        raise ValueError(_TOO_LARGE)
    return left**right


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ValueError(_ONLY_ARITHMETIC)
        return _bounded(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(left, right))
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ValueError(_ONLY_ARITHMETIC)


def evaluate_arithmetic(expression: str) -> float | int:
    """The value of an arithmetic expression; ``ValueError`` for anything else."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:  # ValueError: a literal of over 4,300 digits
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    try:
        return _evaluate(tree)  # type: ignore[no-any-return]
    except OverflowError:  # a float out of range, or an int too large for one
        raise ValueError(_TOO_LARGE) from None
    except ZeroDivisionError:
        raise ValueError("division by zero") from None


@tool
async def clock() -> str:
    """The current local date and time (ISO 8601, with the UTC offset)."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


@tool
async def calculate(expression: Annotated[str, "Arithmetic, e.g. (2 + 3) * 4 / 7"]) -> str:
    """Evaluate an arithmetic expression exactly as Python would and return the result."""
    return str(evaluate_arithmetic(expression))


@tool
def read_file(path: Annotated[str, "A path relative to the working directory"]) -> str:
    """Read a text file under the working directory (at most 64 KiB)."""
    root = Path.cwd().resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ValueError(f"{path!r} is outside the working directory")
    data = target.read_bytes()[:MAX_FILE_BYTES]
    return data.decode("utf-8", errors="replace")


MAX_WAIT_SECONDS = 60.0


@tool
async def wait(seconds: Annotated[float, "How long to wait, 0 to 60 seconds"]) -> str:
    """Wait a number of seconds, then say so (a slow tool, to try aborting mid-tool)."""
    if not 0 <= seconds <= MAX_WAIT_SECONDS:
        raise ValueError(f"seconds: expected 0 to {MAX_WAIT_SECONDS:g}, got {seconds:g}")
    await trio.sleep(seconds)
    return f"waited {seconds:g} seconds"


def example_tools() -> list[AgentTool]:
    """The tools ``chat``, ``rpc`` and ``serve`` give their agents."""
    return [clock, calculate, read_file, wait]
