"""Example tools for ``chat``, ``rpc`` and ``serve``: the time, arithmetic, reading a file.

They are small on purpose and safe to hand to any model: the calculator evaluates arithmetic
only (no names, no calls), and ``read_file`` reads text files under the working directory.
"""

from __future__ import annotations

import ast
import datetime
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

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


def _evaluate(node: ast.AST) -> float | int:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ValueError("only numbers and + - * / // % ** ( ) are allowed")
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _BINARY[type(node.op)](left, right)  # type: ignore[no-any-return]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))  # type: ignore[no-any-return]
    raise ValueError("only numbers and + - * / // % ** ( ) are allowed")


def evaluate_arithmetic(expression: str) -> float | int:
    """The value of an arithmetic expression; ``ValueError`` for anything else."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    return _evaluate(tree)


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


def example_tools() -> list[AgentTool]:
    """The tools ``chat``, ``rpc`` and ``serve`` give their agents."""
    return [clock, calculate, read_file]
