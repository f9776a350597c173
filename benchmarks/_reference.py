"""The reference column: pi-agent-core 0.73.1 on Node, installed with npm on first use."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import attrs

HERE = Path(__file__).resolve().parent / "reference"
HARNESS = HERE / "bench.mjs"
PINNED = {"@mariozechner/pi-agent-core": "0.73.1", "@mariozechner/pi-ai": "0.73.1"}
INSTALL_TIMEOUT = 600.0


@attrs.frozen
class Reference:
    """Whether the reference can run; ``reason`` says why not."""

    available: bool
    reason: str = ""
    node: str = ""
    command: tuple[str, ...] = ()


def _installed() -> bool:
    for name, version in PINNED.items():
        manifest = HERE / "node_modules" / name / "package.json"
        try:
            if json.loads(manifest.read_text())["version"] != version:
                return False
        except (OSError, ValueError, KeyError):
            return False
    return True


def prepare(log: object = print) -> Reference:
    """Find node and make sure the pinned packages are installed (``npm install`` once)."""
    node = shutil.which("node")
    if node is None:
        return Reference(False, "node is not on PATH")
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return Reference(False, f"node does not run: {exc}")
    if not _installed():
        npm = shutil.which("npm")
        if npm is None:
            return Reference(False, "npm is not on PATH (needed once to install pi)", version)
        if callable(log):
            log("installing pi-agent-core 0.73.1 with npm (first use only)")
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"],
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return Reference(False, f"npm install failed: {exc}", version)
        if done.returncode != 0 or not _installed():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return Reference(False, f"npm install failed: {tail[0]}", version)
    return Reference(True, node=version, command=(node, "--no-warnings", str(HARNESS)))
