"""Test-session set-up: say where pi's recorded traces come from (or that they are missing)."""

from __future__ import annotations

from .pi_fixtures import AVAILABLE, FIXTURE_DIR, MISSING


def pytest_report_header() -> str:
    if AVAILABLE:
        return f"pi fixtures: {FIXTURE_DIR}"
    return f"pi fixtures: MISSING: interop tests are skipped. {MISSING}"
