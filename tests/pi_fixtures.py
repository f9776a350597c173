"""Access to the traces recorded from pi 0.73.1 (``../shared/fixtures/pi-0.73.1``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest

import pi_trio as pt

_RELATIVE = Path("shared") / "fixtures" / "pi-0.73.1"


def _find_fixtures() -> Path:
    """``$PI_TRIO_FIXTURES``, else ``shared/fixtures/pi-0.73.1`` beside the checkout or above."""
    if "PI_TRIO_FIXTURES" in os.environ:
        return Path(os.environ["PI_TRIO_FIXTURES"])
    here = Path(__file__).resolve().parents[1]
    for parent in here.parents:
        if (parent / _RELATIVE).is_dir():
            return parent / _RELATIVE
    return here.parent / _RELATIVE


FIXTURE_DIR = _find_fixtures()


AVAILABLE = FIXTURE_DIR.is_dir() and any(FIXTURE_DIR.glob("*.json"))
MISSING = (
    f"pi's recorded traces not found at {FIXTURE_DIR} (they live in the project's shared "
    "folder beside the checkout; set PI_TRIO_FIXTURES to point elsewhere)"
)
if not AVAILABLE and os.environ.get("PI_TRIO_REQUIRE_FIXTURES"):
    raise RuntimeError(MISSING)  # CI sets PI_TRIO_REQUIRE_FIXTURES: interop must be tested

requires_fixtures = pytest.mark.skipif(not AVAILABLE, reason=MISSING)


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURE_DIR.glob("*.json"))


def fixture_params(names: list[str] | None = None) -> list[Any]:
    """Names to parametrize over; one skipped placeholder when the traces are missing."""
    if not AVAILABLE:
        return [pytest.param("missing", marks=pytest.mark.skip(reason=MISSING))]
    return fixture_names() if names is None else names


def load(name: str) -> dict[str, Any]:
    with open(FIXTURE_DIR / f"{name}.json") as f:
        data: dict[str, Any] = json.load(f)
    return data


@attrs.define
class Notification:
    """The custom message of fixture O22 (role "notification")."""

    role = "notification"
    text: str
    timestamp: int


pt.register_message_type(Notification)
