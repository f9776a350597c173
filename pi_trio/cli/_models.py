"""``--model``: a built-in scripted model, or ``provider/id`` from the registry with its key."""

from __future__ import annotations

import attrs

from .._errors import PiError
from ..models import ENV_API_KEYS, Model, get_env_api_key, get_model, list_models
from ..providers import StreamFn

__all__ = ["ANY_ID", "SCRIPTED", "CliError", "ModelChoice", "resolve_model"]

SCRIPTED = "faux"
"""The ``--model`` value that selects the built-in scripted model (no key, no network)."""

# Providers that run on this machine and need no key.
_KEYLESS = frozenset({"ollama", "faux"})

ANY_ID = frozenset({"ollama", "openrouter", "groq"})
"""Providers whose servers take any model id (local servers, routers): ``--model`` accepts an
id the registry does not list, with the settings of that provider's listed model."""


class CliError(PiError):
    """A usage problem the command line reports in one line and exits with status 2."""


@attrs.frozen
class ModelChoice:
    """The model to use; ``stream_fn`` is None for real providers (``stream_simple`` is used)."""

    model: Model
    stream_fn: StreamFn | None = None

    @property
    def scripted(self) -> bool:
        return self.stream_fn is not None

    @property
    def label(self) -> str:
        return f"{self.model.provider}/{self.model.id}"


def resolve_model(spec: str, base_url: str | None = None) -> Model:
    """The model named ``provider/id``, checked for an API key.

    For the providers of :data:`ANY_ID` an id the registry does not list is accepted (its
    provider's listed model with that id). ``base_url`` replaces the model's server
    (``http://host:11434/v1`` for an Ollama elsewhere, say); with it, a provider the registry
    does not know (``llama.cpp/qwen3``) is a local OpenAI-compatible server that needs no key.

    Raises :class:`CliError` with a message that says what to do (unknown model, missing key).
    """
    provider, sep, model_id = spec.partition("/")
    if not sep or not provider or not model_id:
        raise CliError(
            f"--model wants provider/id (e.g. anthropic/claude-sonnet-4-5) or {SCRIPTED!r}, "
            f"got {spec!r}"
        )
    local = False
    try:
        model = get_model(provider, model_id)
    except PiError as exc:
        templates = list_models(provider) if provider in ANY_ID else []
        if not templates and base_url is None:
            raise CliError(
                f"{exc}; for a local OpenAI-compatible server (llama.cpp, vLLM, LM Studio...) "
                "add --base-url http://host:port/v1"
            ) from None
        if not templates:  # a local server under its own name: OpenAI-compatible, no key
            templates, local = list_models("ollama"), True
        model = attrs.evolve(templates[0], id=model_id, name=model_id)
        if local:
            model = attrs.evolve(model, provider=provider)
    if base_url is not None:
        if not base_url.startswith(("http://", "https://")):
            raise CliError(f"--base-url wants an http:// or https:// URL, got {base_url!r}")
        model = attrs.evolve(model, base_url=base_url.rstrip("/"))
    if not local and model.provider not in _KEYLESS and get_env_api_key(model.provider) is None:
        names = " or ".join(ENV_API_KEYS.get(model.provider, ())) or "an API key variable"
        raise CliError(f"{spec} needs an API key: set {names} in the environment")
    return model
