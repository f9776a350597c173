#!/usr/bin/env python3
"""Set-up and everyday commands with nothing but Python 3.11+ and pip.

    python3 tasks.py test    # make .venv (first time), install pi_trio[dev], run the tests
    python3 tasks.py demo    # the scripted demo (no API key, no network)
    python3 tasks.py lint    # ruff check, ruff format --check, mypy --strict pi_trio
    python3 tasks.py docs    # install pi_trio[docs] too, build the docs: mkdocs build --strict
    python3 tasks.py bench   # the benchmarks S1-S7 beside a bare-Trio floor and pi on Node
                             # (--quick, --only S1,S3, --json PATH; see docs/benchmarks.md)

Extra arguments go to the underlying tool (``python3 tasks.py test -k wire``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("PI_TRIO_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".pi_trio-installed"


def _python() -> str:
    return str(BIN / "python")


def _installed() -> tuple[str, set[str]]:
    """(pyproject digest, extras) of the last install, or ("", set()) when unknown."""
    try:
        stamp = json.loads(STAMP.read_text())
        return str(stamp["digest"]), set(stamp["extras"])
    except (OSError, ValueError, KeyError, TypeError):
        return "", set()


def ensure_env(extras: tuple[str, ...] = ("dev",)) -> None:
    """Create the virtualenv and (re)install the project when pyproject.toml changed or an
    extra it needs now (``docs``) was not installed yet."""
    started = time.monotonic()
    if not (BIN / "python").exists():
        print(f"first run: creating a virtualenv in {VENV} (a few seconds)", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    installed_digest, installed_extras = _installed()
    if installed_digest == digest and installed_extras.issuperset(extras):
        return
    wanted = sorted(set(extras) | (installed_extras if installed_digest == digest else set()))
    print(
        f"installing pi_trio[{','.join(wanted)}] and its dependencies (trio, httpx, attrs, "
        f"cattrs, jsonschema{', pytest, ruff, mypy' if 'dev' in wanted else ''}...) with pip; "
        "this usually takes 15-60 s, once: later runs skip it until pyproject.toml changes",
        flush=True,
    )
    print("  upgrading pip...", flush=True)
    subprocess.run([_python(), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    print("  installing the packages...", flush=True)
    target = f"{ROOT}[{','.join(wanted)}]"
    subprocess.run([_python(), "-m", "pip", "install", "-q", "-e", target], check=True)
    STAMP.write_text(json.dumps({"digest": digest, "extras": wanted}))
    print(f"  done in {time.monotonic() - started:.0f} s", flush=True)


def run(*args: str) -> int:
    return subprocess.run(args, cwd=ROOT).returncode


def cmd_test(extra: list[str]) -> int:
    code = run(_python(), "-m", "pytest", *extra)
    if code == 5:
        print("pytest collected no tests: that is a failure here", file=sys.stderr)
        return 1
    return code


def cmd_lint(extra: list[str]) -> int:
    for args in (
        ("-m", "ruff", "check", "."),
        ("-m", "ruff", "format", "--check", "."),
        ("-m", "mypy", "--strict", "pi_trio", "_pi_trio_launcher.py"),
    ):
        code = run(_python(), *args, *extra)
        if code:
            return code
    return 0


def cmd_demo(extra: list[str]) -> int:
    return run(_python(), "-m", "pi_trio", "demo", *extra)


def cmd_docs(extra: list[str]) -> int:
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    return run(_python(), "-m", "mkdocs", "build", "--strict", *extra)


def cmd_bench(extra: list[str]) -> int:
    return run(_python(), "-m", "benchmarks", *extra)


COMMANDS = {
    "test": cmd_test,
    "lint": cmd_lint,
    "demo": cmd_demo,
    "docs": cmd_docs,
    "bench": cmd_bench,
}
EXTRAS = {"docs": ("dev", "docs")}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        return 2
    ensure_env(EXTRAS.get(argv[0], ("dev",)))
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
