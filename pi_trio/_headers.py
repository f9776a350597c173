"""HTTP headers that carry credentials: never shown in a repr, masked in every error.

A custom server is often reached with ``headers={"Authorization": "Bearer ..."}`` rather than
``api_key``; such a header's value is as secret as the key. Which headers: by name, anything
that reads as a credential (``Authorization``, ``x-api-key``, a token, a cookie, a secret).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["header_secrets", "headers_repr"]

_CREDENTIAL = re.compile(r"auth|key|token|secret|cookie|password|signature", re.IGNORECASE)


def _is_credential(name: object) -> bool:
    return isinstance(name, str) and _CREDENTIAL.search(name) is not None


def header_secrets(headers: Mapping[str, str] | None) -> tuple[str, ...]:
    """The credential values among ``headers``, each whole and without its scheme (for
    ``Bearer K``, also ``K``: a server may echo either)."""
    found: list[str] = []
    for name, value in (headers or {}).items():
        if _is_credential(name) and isinstance(value, str):
            found.append(value)
            rest = value.strip().partition(" ")[2].strip()
            if rest:
                found.append(rest)
    return tuple(found)


def headers_repr(headers: Mapping[str, str] | None) -> str:
    """``headers`` for a repr: credential values shown as ``***``."""
    if headers is None:
        return "None"
    return repr({name: "***" if _is_credential(name) else value for name, value in headers.items()})
