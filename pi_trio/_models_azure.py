"""The registry's Azure OpenAI models (pi-ai 0.73.1's ``azure-openai-responses`` figures).

Plain rows, turned into :class:`pi_trio.Model` by :mod:`pi_trio.models`: (id, name, reasoning,
takes images, cost per million tokens (input, output, cache read, cache write), context
window, max output tokens). Their ``base_url`` is empty, as in pi-ai: the resource comes from
``AZURE_OPENAI_BASE_URL`` or ``AZURE_OPENAI_RESOURCE_NAME`` (see
:mod:`pi_trio.providers.azure_openai_responses`).
"""

from __future__ import annotations

PROVIDER = "azure-openai-responses"
API = "azure-openai-responses"
BASE_URL = ""

ROWS: tuple[tuple[str, str, bool, bool, tuple[float, float, float, float], int, int], ...] = (
    ("gpt-5", "GPT-5", True, True, (1.25, 10, 0.125, 0), 400_000, 128_000),
    ("gpt-5-mini", "GPT-5 Mini", True, True, (0.25, 2, 0.025, 0), 400_000, 128_000),
    ("gpt-5.1", "GPT-5.1", True, True, (1.25, 10, 0.13, 0), 400_000, 128_000),
    ("gpt-4.1", "GPT-4.1", False, True, (2, 8, 0.5, 0), 1_047_576, 32_768),
    ("gpt-4.1-mini", "GPT-4.1 mini", False, True, (0.4, 1.6, 0.1, 0), 1_047_576, 32_768),
    ("gpt-4o", "GPT-4o", False, True, (2.5, 10, 1.25, 0), 128_000, 16_384),
    ("gpt-4o-mini", "GPT-4o mini", False, True, (0.15, 0.6, 0.08, 0), 128_000, 16_384),
    ("o4-mini", "o4-mini", True, True, (1.1, 4.4, 0.28, 0), 200_000, 100_000),
)
