"""Access to the traces recorded from pi 0.73.1 (``../shared/fixtures/pi-0.73.1``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs

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


def fixture_names() -> list[str]:
    names = sorted(p.stem for p in FIXTURE_DIR.glob("*.json"))
    if not names:
        raise RuntimeError(
            f"no pi fixtures found in {FIXTURE_DIR}; set PI_TRIO_FIXTURES to the folder"
        )
    return names


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
