"""The shape STYLE.md asks of the code, held by CI: small modules, functions a reader can hold in
the loop and the Agent, no import circle inside ``pi_trio`` (imports made only for type checking
count: a module that needs another's types to describe its work is coupled to it), and nothing
built committed."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pi_trio as pt

ROOT = Path(pt.__file__).parent
WIRE_TRANSLATIONS = {"openai_completions.py", "openai_responses.py", "anthropic.py", "google.py"}
BRANCHES = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.ExceptHandler, ast.With,
    ast.AsyncWith, ast.Assert, ast.comprehension, ast.match_case,
)  # fmt: skip


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def test_no_module_outgrows_the_size_rule() -> None:
    # 500 lines at most, 650 for the four wire API translations
    too_long = {}
    for name, path in _modules():
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > (650 if path.name in WIRE_TRANSLATIONS else 500):
            too_long[name] = count
    assert too_long == {}


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Cyclomatic complexity, as radon counts it: 1, plus one per branch, loop, handler,
    ``with``, ``assert``, comprehension, match case, and boolean operand after the first."""
    total = 1
    todo: list[ast.AST] = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue  # a nested function is counted on its own
        if isinstance(node, BRANCHES):
            total += 1
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
        todo.extend(ast.iter_child_nodes(node))
    return total


def test_no_function_of_the_loop_or_the_agent_is_over_15() -> None:
    over = {}
    for name, path in _modules():
        if not name.startswith(("pi_trio.loop", "pi_trio.agent")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                score = complexity(node)
                if score > 15:
                    over[f"{name}.{node.name}"] = score
    assert over == {}


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The pi_trio modules ``name`` imports, TYPE_CHECKING imports included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = node.module or ""
            head = f"{base}.{module}".rstrip(".") if node.level else module
            targets = [head, *(f"{head}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(target for target in targets if target in known and target != name)
    return found


def import_circles() -> list[list[str]]:
    """Every strongly connected group of more than one pi_trio module in the import graph
    (Tarjan's algorithm); a package's ``__init__`` re-exporting its modules is not a circle
    with them, so edges from a package into its own submodules are left out."""
    paths = dict(_modules())
    graph = {
        name: {t for t in _imported(name, path, set(paths)) if not t.startswith(name + ".")}
        for name, path in paths.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_import_circle_inside_pi_trio() -> None:
    assert import_circles() == []


def test_the_shape_checks_see_what_they_look_for(tmp_path: Path) -> None:
    tangled = ast.parse(
        "def f(x):\n"
        "    if x and x > 1 or x < -1:\n"
        "        return [y for y in x if y]\n"
        "    for i in x:\n"
        "        try:\n"
        "            pass\n"
        "        except ValueError:\n"
        "            pass\n"
    ).body[0]
    assert isinstance(tangled, ast.FunctionDef)
    assert complexity(tangled) == 7  # 1 + if + and, or + comprehension + for + except
    module = tmp_path / "pi_trio" / "loop" / "_a.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B\n"
    )
    known = {"pi_trio.loop._a", "pi_trio.loop._b"}
    assert _imported("pi_trio.loop._a", module, known) == {"pi_trio.loop._b"}


def test_no_wheels_are_committed_at_the_root() -> None:
    # a built package belongs to a release, not to the repository
    assert sorted(p.name for p in ROOT.parent.glob("*.whl")) == []
