"""Layers meet through public seams: no module imports another subpackage's private parts.

The rule (that of /work/shared/tools/structure_check.py): a module of subpackage A
(``pi_trio/A/...``) may import from subpackage B only B's public modules and public names;
never ``pi_trio.B._mod``, nor a ``_name`` from B. Shared top-level private modules
(``pi_trio/_errors.py``, ``pi_trio/_groups.py``) are for everyone; within one subpackage
anything goes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pi_trio

ROOT = Path(pi_trio.__file__).resolve().parent

# Crossings tolerated for now (each with its reason); empty since issue 11 landed. An entry
# whose crossing is gone fails test_known_violations_still_exist, so the set stays true.
KNOWN_VIOLATIONS: frozenset[str] = frozenset()


def _subpackage(root: Path, parts: list[str]) -> str | None:
    """``pi_trio.loop._run`` -> "loop"; a top-level module (``pi_trio._errors``) -> None."""
    if len(parts) >= 2 and (root / parts[1]).is_dir():
        return parts[1]
    return None


def _imports(root: Path, path: Path) -> Iterator[tuple[list[str], list[str]]]:
    """(module imported from, names imported) for every import of a pi_trio module in ``path``."""
    relative = path.relative_to(root.parent).with_suffix("")
    module = list(relative.parts)
    if module[-1] == "__init__":
        module = module[:-1]
    package = module if path.name == "__init__.py" else module[:-1]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pi_trio":
                    yield alias.name.split("."), []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "pi_trio":
                target = node.module.split(".")
            else:
                continue
            yield target, [alias.name for alias in node.names]


def _violations(root: Path, path: Path) -> Iterator[str]:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = [p for p in relative.parts if p != "__init__"]
    here = _subpackage(root, parts)
    for target, names in _imports(root, path):
        there = _subpackage(root, target)
        if there is None or there == here:
            continue
        private_module = any(p.startswith("_") for p in target[2:])
        private_names = [n for n in names if n.startswith("_")]
        # ``from pi_trio.loop import _run`` imports a private module by name
        if private_module or private_names:
            what = ".".join(target) + (f" ({', '.join(private_names)})" if private_names else "")
            yield f"{'.'.join(parts)} imports {what}"


def _all_violations() -> set[str]:
    return {v for path in sorted(ROOT.rglob("*.py")) for v in _violations(ROOT, path)}


def test_no_cross_subpackage_import_of_private_names() -> None:
    new = sorted(_all_violations() - KNOWN_VIOLATIONS)
    assert not new, "imports of another subpackage's private parts:\n" + "\n".join(new)


def test_known_violations_still_exist() -> None:
    gone = sorted(KNOWN_VIOLATIONS - _all_violations())
    assert not gone, "fixed: delete from KNOWN_VIOLATIONS:\n" + "\n".join(gone)


def test_the_checker_sees_each_kind_of_crossing(tmp_path: Path) -> None:
    """The rule itself, on made-up modules: it must catch what it claims to catch."""
    root = tmp_path / "pi_trio"
    for package in ("agent", "loop"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "_errors.py").write_text("")
    (root / "agent" / "_agent.py").write_text(
        "from ..loop._run import run\n"  # private module, relative
        "from pi_trio.loop import _helper\n"  # private name, absolute
        "import pi_trio.loop._config\n"  # private module, plain import
        "from ..loop import run_agent_loop\n"  # public: fine
        "from .._errors import PiError\n"  # shared private module: fine
        "from . import _inbox\n"  # own subpackage: fine
    )
    found = sorted(_violations(root, root / "agent" / "_agent.py"))
    assert found == [
        "pi_trio.agent._agent imports pi_trio.loop (_helper)",
        "pi_trio.agent._agent imports pi_trio.loop._config",
        "pi_trio.agent._agent imports pi_trio.loop._run",
    ]
