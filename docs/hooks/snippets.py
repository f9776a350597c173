"""mkdocs hooks: broken includes and an incomplete API reference fail the build.

Snippets: a snippet marker that is malformed or names a missing file fails the build.

``pymdownx.snippets`` (with ``check_paths``) fails on a missing file only when it recognises the
marker; a marker mangled by a formatter (``--8 < --"file"``) is left in the page as text and the
strict build passes. This hook recognises anything that looks like a marker and fails on it
unless it is exactly ``--8<-- "path"`` (or ``;--8<--``) naming an existing file. The test suite
runs the same check (tests/test_docs.py).

Reference: the API reference page must render an entry for every name of ``pt.__all__``
(:func:`missing_from_reference`, on the rendered HTML), or the build fails.

Docstrings: pi_trio's docstrings use reST roles (``:class:`pt.Agent```) that mkdocstrings'
Google style leaves as text; :func:`strip_roles` removes the role and keeps the code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

LOOKS_LIKE_MARKER = re.compile(r"^\s*;?-+\s*8\s*<\s*-+.*$", re.MULTILINE)
WELL_FORMED = re.compile(r'^\s*;?--8<-- "(?P<path>[^"]+)"\s*$')


def snippet_problems(markdown: str, root: Path = ROOT) -> list[str]:
    """What is wrong with the snippet markers of one page (empty: nothing)."""
    problems = []
    for match in LOOKS_LIKE_MARKER.finditer(markdown):
        line = match.group(0)
        number = markdown.count("\n", 0, match.start()) + 1
        well_formed = WELL_FORMED.match(line)
        if well_formed is None:
            problems.append(f'line {number}: malformed snippet marker {line.strip()!r}; '
                            f'write --8<-- "path/to/file"')  # fmt: skip
        elif not (root / well_formed.group("path")).is_file():
            problems.append(f"line {number}: the included file {well_formed.group('path')} "
                            "does not exist")  # fmt: skip
    return problems


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    problems = snippet_problems(markdown)
    if problems:
        raise ValueError(f"{page.file.src_path}: " + "; ".join(problems))
    return markdown


ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|exc|mod|obj|const|ref):(?=<code>)")
ANCHOR = re.compile(r'id="(pi_trio\.[\w.]+)"')
NOT_RENDERED = {"__version__"}  # a plain string; the package's version is on the home page


def strip_roles(html: str) -> str:
    """``:class:<code>pt.X</code>`` (a reST role left as text) becomes ``<code>pt.X</code>``."""
    return ROLE.sub("", html)


def missing_from_reference(html: str, names: list[str]) -> list[str]:
    """The names of ``names`` that no heading of the rendered reference page is for."""
    rendered = {anchor.rsplit(".", 1)[-1] for anchor in ANCHOR.findall(html)}
    return [name for name in names if name not in rendered and name not in NOT_RENDERED]


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_path == "reference.md":
        sys.path.insert(0, str(ROOT))
        import pi_trio

        missing = missing_from_reference(html, list(pi_trio.__all__))
        if missing:
            raise ValueError(f"reference.md renders no entry for pt.{', pt.'.join(missing)}")
    return strip_roles(html)
