"""The registry's Mistral models (pi-ai 0.73.1's ``mistral`` figures).

Plain rows, turned into :class:`pi_trio.Model` by :mod:`pi_trio.models`: (id, name, reasoning,
takes images, cost per million tokens (input, output, cache read, cache write), context
window, max output tokens). The key is ``MISTRAL_API_KEY``.
"""

from __future__ import annotations

PROVIDER = "mistral"
API = "mistral-conversations"
BASE_URL = "https://api.mistral.ai"

ROWS: tuple[tuple[str, str, bool, bool, tuple[float, float, float, float], int, int], ...] = (
    (
        "mistral-large-latest",
        "Mistral Large (latest)",
        False,
        True,
        (0.5, 1.5, 0, 0),
        262_144,
        262_144,
    ),
    (
        "mistral-medium-latest",
        "Mistral Medium (latest)",
        True,
        True,
        (1.5, 7.5, 0, 0),
        262_144,
        262_144,
    ),
    (
        "mistral-small-latest",
        "Mistral Small (latest)",
        True,
        True,
        (0.15, 0.6, 0, 0),
        256_000,
        256_000,
    ),
    (
        "magistral-medium-latest",
        "Magistral Medium (latest)",
        True,
        False,
        (2, 5, 0, 0),
        128_000,
        16_384,
    ),
    ("magistral-small", "Magistral Small", True, False, (0.5, 1.5, 0, 0), 128_000, 128_000),
    ("codestral-latest", "Codestral (latest)", False, False, (0.3, 0.9, 0, 0), 256_000, 4_096),
    (
        "devstral-medium-latest",
        "Devstral 2 (latest)",
        False,
        False,
        (0.4, 2, 0, 0),
        262_144,
        262_144,
    ),
    (
        "ministral-8b-latest",
        "Ministral 8B (latest)",
        False,
        False,
        (0.1, 0.1, 0, 0),
        128_000,
        128_000,
    ),
    ("pixtral-large-latest", "Pixtral Large (latest)", False, True, (2, 6, 0, 0), 128_000, 128_000),
)
