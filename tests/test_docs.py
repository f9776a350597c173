"""Checks of the documentation that the strict mkdocs build alone would not catch."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import pi_trio as pt

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("snippets_hook", DOCS / "hooks" / "snippets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


snippets = load_hook()


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_snippet_marker_is_well_formed_and_its_file_exists(page: Path) -> None:
    assert snippets.snippet_problems(page.read_text()) == []


def test_the_check_catches_a_mangled_marker_and_a_missing_file() -> None:
    page = 'text\n```python\n--8 < --"docs/examples/embed_service.py"\n```\n--8<-- "docs/nope.py"\n'
    assert snippets.snippet_problems(page) == [
        "line 3: malformed snippet marker '--8 < --\"docs/examples/embed_service.py\"'; "
        'write --8<-- "path/to/file"',
        "line 5: the included file docs/nope.py does not exist",
    ]
    assert snippets.snippet_problems('--8<-- "docs/examples/embed_service.py"\n') == []


def test_mkdocs_runs_the_hook() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    assert "hooks:\n  - docs/hooks/snippets.py\n" in config


def reference_entries() -> dict[str, object]:
    """Name -> object of every entry reference.md renders (a module's members included)."""
    text = (DOCS / "reference.md").read_text()
    entries: dict[str, object] = {}
    for match in re.finditer(r"^::: (\S+)\n((?:    .*\n)*)", text, re.MULTILINE):
        path, options = match.group(1), match.group(2)
        assert "._" not in path, f"{path}: document the public name, not a private module"
        module_name, _, attr = path.rpartition(".")
        try:
            module = importlib.import_module(path)
        except ImportError:
            entries[attr] = getattr(importlib.import_module(module_name), attr)
            continue
        entries[attr] = module
        if "members: false" not in options:
            for name in module.__all__:
                entries.setdefault(name, getattr(module, name))
    return entries


def test_the_reference_has_an_entry_for_every_exported_name() -> None:
    entries = reference_entries()
    missing = [n for n in pt.__all__ if n not in entries and n not in snippets.NOT_RENDERED]
    assert missing == []
    for name in pt.__all__:
        if name in entries:
            assert entries[name] is getattr(pt, name), f"{name}: the entry is another object"


def test_the_build_check_finds_a_name_the_reference_does_not_render() -> None:
    html = '<h2 id="pi_trio.agent.Agent">Agent</h2><h3 id="pi_trio.PiError">PiError</h3>'
    assert snippets.missing_from_reference(html, ["Agent", "PiError", "Model", "__version__"]) == [
        "Model"
    ]


def test_rest_roles_are_stripped_from_rendered_docstrings() -> None:
    html = "see :class:<code>pt.Agent</code> and :func:<code>pt.tool</code>, ratio 1:2"
    assert (
        snippets.strip_roles(html)
        == "see <code>pt.Agent</code> and <code>pt.tool</code>, ratio 1:2"
    )


def test_no_section_is_named_after_a_private_module() -> None:
    text = (DOCS / "reference.md").read_text()
    assert not re.search(r"^#+ .*\b_\w+", text, re.MULTILINE)


def test_concepts_does_not_call_at_tool_boundary_unbuilt() -> None:
    text = (ROOT / "docs" / "concepts.md").read_text()
    assert 'Not built yet: `steering_policy="at_tool_boundary"`' not in text
