"""``--model``: a built-in scripted model, or ``provider/id`` from the registry with its key."""

from __future__ import annotations

import attrs

from .._errors import PiError
from ..models import ENV_API_KEYS, Model, get_env_api_key, get_model
from ..providers import StreamFn

__all__ = ["SCRIPTED", "CliError", "ModelChoice", "resolve_model"]

SCRIPTED = "faux"
"""The ``--model`` value that selects the built-in scripted model (no key, no network)."""

# Providers that run on this machine and need no key.
_KEYLESS = frozenset({"ollama", "faux"})


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


def resolve_model(spec: str) -> Model:
    """The registry model named ``provider/id``, checked for an API key.

    Raises :class:`CliError` with a message that says what to do (unknown model, missing key).
    """
    provider, sep, model_id = spec.partition("/")
    if not sep or not provider or not model_id:
        raise CliError(
            f"--model wants provider/id (e.g. anthropic/claude-sonnet-4-5) or {SCRIPTED!r}, "
            f"got {spec!r}"
        )
    try:
        model = get_model(provider, model_id)
    except PiError as exc:
        raise CliError(str(exc)) from None
    if model.provider not in _KEYLESS and get_env_api_key(model.provider) is None:
        names = " or ".join(ENV_API_KEYS.get(model.provider, ())) or "an API key variable"
        raise CliError(f"{spec} needs an API key: set {names} in the environment")
    return model
