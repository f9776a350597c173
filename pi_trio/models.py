"""Model descriptors, a small built-in registry, and API keys from the environment.

A :class:`Model` says which wire API to speak (``api``), where (``base_url``), and what the
model costs and can take. The registry holds common models of OpenAI, Anthropic, Google, Azure
OpenAI, Mistral and OpenAI-compatible servers with pi-ai's figures; build your own
:class:`Model` for anything else
(``attrs.evolve(pt.get_model("ollama", "llama3.1"), id="qwen3:8b")`` is the usual shortcut).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, final

import attrs

from . import _models_azure, _models_mistral
from ._cloud_models import CLOUD_MODELS
from ._errors import ProviderNotFoundError
from ._headers import headers_repr

__all__ = [
    "ENV_API_KEYS",
    "Model",
    "ModelCost",
    "ThinkingLevel",
    "get_env_api_key",
    "get_model",
    "list_models",
]

ThinkingLevel: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh"]


@final
@attrs.frozen
class ModelCost:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@final
@attrs.frozen
class Model:
    """Everything a provider needs to know about a model.

    ``compat`` holds per-API switches (for OpenAI-compatible servers: ``max_tokens_field``,
    ``supports_developer_role``, ``supports_usage_in_streaming``, ``thinking_format``, ...);
    providers fill in defaults from ``provider`` and ``base_url`` where it is left empty.
    """

    id: str
    name: str
    api: str
    provider: str
    base_url: str
    reasoning: bool = False
    input: tuple[Literal["text", "image"], ...] = ("text",)
    cost: ModelCost = attrs.field(factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: Mapping[str, str] | None = attrs.field(default=None, repr=headers_repr)
    compat: Mapping[str, Any] | None = None


# Environment variables per provider, as pi-ai reads them (first one set wins).
ENV_API_KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "google": ("GEMINI_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "google-vertex": ("GOOGLE_CLOUD_API_KEY",),
    "azure-openai-responses": ("AZURE_OPENAI_API_KEY",),
}

_AUTHENTICATED = "<authenticated>"  # pi-ai's answer for credentials that are not a key
_AWS_CREDENTIAL_VARIABLES = (
    "AWS_PROFILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


def _cloud_credentials(provider: str) -> str | None:
    """pi-ai's "<authenticated>" when the cloud credentials of ``provider`` are configured:
    Vertex's application-default credentials file plus project and location, or any of
    AWS's credential sources (Bedrock)."""
    env = os.environ
    if provider == "google-vertex":
        adc = env.get("GOOGLE_APPLICATION_CREDENTIALS") or os.path.join(
            os.path.expanduser("~"), ".config", "gcloud", "application_default_credentials.json"
        )
        project = env.get("GOOGLE_CLOUD_PROJECT") or env.get("GCLOUD_PROJECT")
        if project and env.get("GOOGLE_CLOUD_LOCATION") and os.path.exists(adc):
            return _AUTHENTICATED
    if provider == "amazon-bedrock":
        keys = env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY")
        if keys or any(env.get(name) for name in _AWS_CREDENTIAL_VARIABLES):
            return _AUTHENTICATED
    return None


def get_env_api_key(provider: str) -> str | None:
    """The API key for ``provider`` from the usual environment variables, or None.

    Args:
        provider: a provider name of the registry ("openai", "anthropic", "google", ...); the
            variables tried are those of :data:`ENV_API_KEYS`, first one set wins. A provider
            without known variables (e.g. "ollama", "faux") gives None. Like pi-ai,
            "google-vertex" and "amazon-bedrock" give "<authenticated>" when their cloud
            credentials are configured instead of a key (the request reads them itself).
    """
    for name in ENV_API_KEYS.get(provider, ()):
        value = os.environ.get(name)
        if value:
            return value
    return _cloud_credentials(provider)


def _m(
    provider: str,
    api: str,
    base_url: str,
    id: str,
    name: str,
    *,
    reasoning: bool,
    image: bool,
    cost: tuple[float, float, float, float],
    context_window: int,
    max_tokens: int,
) -> Model:
    return Model(
        id=id,
        name=name,
        api=api,
        provider=provider,
        base_url=base_url,
        reasoning=reasoning,
        input=("text", "image") if image else ("text",),
        cost=ModelCost(*cost),
        context_window=context_window,
        max_tokens=max_tokens,
    )


_OPENAI = "https://api.openai.com/v1"
_ANTHROPIC = "https://api.anthropic.com"
_GOOGLE = "https://generativelanguage.googleapis.com/v1beta"

_BUILTIN: tuple[Model, ...] = (
    # OpenAI (pi-ai speaks the Responses API to OpenAI itself)
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "gpt-5",
        "GPT-5",
        reasoning=True,
        image=True,
        cost=(1.25, 10, 0.125, 0),
        context_window=400_000,
        max_tokens=128_000,
    ),
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "gpt-5-mini",
        "GPT-5 Mini",
        reasoning=True,
        image=True,
        cost=(0.25, 2, 0.025, 0),
        context_window=400_000,
        max_tokens=128_000,
    ),
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "gpt-4.1",
        "GPT-4.1",
        reasoning=False,
        image=True,
        cost=(2, 8, 0.5, 0),
        context_window=1_047_576,
        max_tokens=32_768,
    ),
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "gpt-4.1-mini",
        "GPT-4.1 mini",
        reasoning=False,
        image=True,
        cost=(0.4, 1.6, 0.1, 0),
        context_window=1_047_576,
        max_tokens=32_768,
    ),
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "gpt-4o",
        "GPT-4o",
        reasoning=False,
        image=True,
        cost=(2.5, 10, 1.25, 0),
        context_window=128_000,
        max_tokens=16_384,
    ),
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "gpt-4o-mini",
        "GPT-4o mini",
        reasoning=False,
        image=True,
        cost=(0.15, 0.6, 0.08, 0),
        context_window=128_000,
        max_tokens=16_384,
    ),
    _m(
        "openai",
        "openai-responses",
        _OPENAI,
        "o4-mini",
        "o4-mini",
        reasoning=True,
        image=True,
        cost=(1.1, 4.4, 0.28, 0),
        context_window=200_000,
        max_tokens=100_000,
    ),
    # Anthropic
    _m(
        "anthropic",
        "anthropic-messages",
        _ANTHROPIC,
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        reasoning=True,
        image=True,
        cost=(3, 15, 0.3, 3.75),
        context_window=200_000,
        max_tokens=64_000,
    ),
    _m(
        "anthropic",
        "anthropic-messages",
        _ANTHROPIC,
        "claude-opus-4-1",
        "Claude Opus 4.1",
        reasoning=True,
        image=True,
        cost=(15, 75, 1.5, 18.75),
        context_window=200_000,
        max_tokens=32_000,
    ),
    _m(
        "anthropic",
        "anthropic-messages",
        _ANTHROPIC,
        "claude-haiku-4-5",
        "Claude Haiku 4.5",
        reasoning=True,
        image=True,
        cost=(1, 5, 0.1, 1.25),
        context_window=200_000,
        max_tokens=64_000,
    ),
    # Google
    _m(
        "google",
        "google-generative-ai",
        _GOOGLE,
        "gemini-2.5-pro",
        "Gemini 2.5 Pro",
        reasoning=True,
        image=True,
        cost=(1.25, 10, 0.125, 0),
        context_window=1_048_576,
        max_tokens=65_536,
    ),
    _m(
        "google",
        "google-generative-ai",
        _GOOGLE,
        "gemini-2.5-flash",
        "Gemini 2.5 Flash",
        reasoning=True,
        image=True,
        cost=(0.3, 2.5, 0.03, 0),
        context_window=1_048_576,
        max_tokens=65_536,
    ),
    # OpenAI-compatible servers (Chat Completions wire API)
    _m(
        "openai",
        "openai-completions",
        _OPENAI,
        "gpt-4o-mini-completions",
        "GPT-4o mini (chat)",
        reasoning=False,
        image=True,
        cost=(0.15, 0.6, 0.08, 0),
        context_window=128_000,
        max_tokens=16_384,
    ),
    _m(
        "groq",
        "openai-completions",
        "https://api.groq.com/openai/v1",
        "llama-3.3-70b-versatile",
        "Llama 3.3 70B (Groq)",
        reasoning=False,
        image=False,
        cost=(0.59, 0.79, 0, 0),
        context_window=131_072,
        max_tokens=32_768,
    ),
    _m(
        "openrouter",
        "openai-completions",
        "https://openrouter.ai/api/v1",
        "anthropic/claude-sonnet-4.5",
        "Claude Sonnet 4.5 (OpenRouter)",
        reasoning=True,
        image=True,
        cost=(3, 15, 0.3, 3.75),
        context_window=200_000,
        max_tokens=64_000,
    ),
    _m(
        "ollama",
        "openai-completions",
        "http://127.0.0.1:11434/v1",
        "llama3.1",
        "Llama 3.1 (Ollama, local)",
        reasoning=False,
        image=False,
        cost=(0, 0, 0, 0),
        context_window=128_000,
        max_tokens=8_192,
    ),
    # The scripted model (pt.faux): no network, no key.
    _m(
        "faux",
        "faux",
        "http://127.0.0.1:0",
        "faux-1",
        "Faux scripted model",
        reasoning=False,
        image=True,
        cost=(0, 0, 0, 0),
        context_window=128_000,
        max_tokens=16_384,
    ),
)


def _rows(rows: Any) -> tuple[Model, ...]:
    """Models from plain rows ``(provider, api, base_url, id, name, reasoning, image, cost,
    context_window, max_tokens)`` (the data-only model modules)."""
    return tuple(
        _m(
            provider,
            api,
            base_url,
            id,
            name,
            reasoning=reasoning,
            image=image,
            cost=cost,
            context_window=window,
            max_tokens=max_tokens,
        )
        for provider, api, base_url, id, name, reasoning, image, cost, window, max_tokens in rows
    )


def _table(provider: str, api: str, base_url: str, rows: Any) -> tuple[Model, ...]:
    """Models from a provider module's rows without the provider, api and base URL (see
    ``_models_azure``)."""
    return _rows((provider, api, base_url, *row) for row in rows)


_BUILTIN += _rows(CLOUD_MODELS)
_BUILTIN += _table(
    _models_azure.PROVIDER, _models_azure.API, _models_azure.BASE_URL, _models_azure.ROWS
)
_BUILTIN += _table(
    _models_mistral.PROVIDER, _models_mistral.API, _models_mistral.BASE_URL, _models_mistral.ROWS
)

_REGISTRY: dict[tuple[str, str], Model] = {(m.provider, m.id): m for m in _BUILTIN}


def get_model(provider: str, model_id: str) -> Model:
    """The built-in model ``model_id`` of ``provider``.

    Args:
        provider: the provider's name, e.g. "openai", "anthropic", "google", "ollama", "faux".
        model_id: the model's id at that provider, e.g. "gpt-4o-mini".

    Raises:
        pt.ProviderNotFoundError: no such provider (the message lists the known providers) or
            no such model of it (the message lists its known ids).
    """
    try:
        return _REGISTRY[(provider, model_id)]
    except KeyError:
        known = sorted(mid for (prov, mid) in _REGISTRY if prov == provider)
        if not known:
            providers = sorted({prov for prov, _ in _REGISTRY})
            raise ProviderNotFoundError(
                f"unknown provider {provider!r}; known providers: {', '.join(providers)}"
            ) from None
        raise ProviderNotFoundError(
            f"unknown model {model_id!r} for provider {provider!r}; known: {', '.join(known)}"
        ) from None


def list_models(provider: str | None = None) -> list[Model]:
    """The built-in models, in registry order.

    Args:
        provider: only this provider's models; None for all. An unknown provider gives [].
    """
    return [m for m in _BUILTIN if provider is None or m.provider == provider]
