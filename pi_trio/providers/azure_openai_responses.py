"""The "azure-openai-responses" wire API: OpenAI's Responses API on an Azure OpenAI resource.

The body and the events are the Responses API's own (:mod:`.openai_responses` builds and
decodes them; nothing is copied here). What Azure changes, as pi-ai 0.73.1 does it:

* **Where.** ``POST {base}/responses?api-version={version}``. The base is, first found:
  ``AZURE_OPENAI_BASE_URL``; ``https://{AZURE_OPENAI_RESOURCE_NAME}.openai.azure.com/openai/v1``;
  the model's ``base_url`` (the registry's Azure models have none: one of the variables, or
  ``attrs.evolve(model, base_url=...)``, says which resource). An Azure host given without a
  path (or with ``/openai``) gets ``/openai/v1``. ``version`` is ``AZURE_OPENAI_API_VERSION``,
  else the model's ``compat["azure_api_version"]``, else ``"v1"``.
* **Which deployment.** The body's ``model`` is the deployment name: the model's
  ``compat["azure_deployment"]``, else its entry in ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP``
  (``"gpt-5=my-gpt5,gpt-4o=prod-4o"``), else the model id.
* **The key** (``AZURE_OPENAI_API_KEY``, or ``StreamOptions.api_key``) goes in the ``api-key``
  header, not ``Authorization``.
* Tool call ids of this provider carry their Responses item id (``call_id|item_id``), as
  OpenAI's do.

A content filter that stops the answer (``response.incomplete`` with reason
``content_filter``) ends the stream with stop_reason "error" and a message naming the filter;
a prompt the filter refuses is Azure's HTTP 400 with code ``content_filter``, reported with
Azure's own text.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from ..messages import Context
from ..models import Model
from ._options import StreamOptions
from ._stream import WireApi, WireRequest
from .openai_responses import TOOL_CALL_ID_PROVIDERS, ResponsesDecoder, responses_body

__all__ = ["azure_base_url", "build_request", "deployment_name", "stream_azure_openai_responses"]

DEFAULT_API_VERSION = "v1"
_ID_PROVIDERS = TOOL_CALL_ID_PROVIDERS | {"azure-openai-responses"}
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com")


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def azure_base_url(model: Model) -> str:
    """The resource's Responses API base URL for ``model`` (see the module doc).

    Raises:
        ValueError: no endpoint is known (the message names the variables to set), or the
            one given is not an http(s) URL.
    """
    base = _env("AZURE_OPENAI_BASE_URL")
    if not base and _env("AZURE_OPENAI_RESOURCE_NAME"):
        base = f"https://{_env('AZURE_OPENAI_RESOURCE_NAME')}.openai.azure.com/openai/v1"
    base = (base or model.base_url).strip().rstrip("/")
    if not base:
        raise ValueError(
            "no Azure OpenAI endpoint: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, "
            "or give the model a base_url"
        )
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the Azure OpenAI base URL is not an http(s) URL: {base!r}")
    path = parts.path.rstrip("/")
    if parts.hostname.endswith(_AZURE_HOSTS) and path in ("", "/openai"):
        return urlunsplit((parts.scheme, parts.netloc, "/openai/v1", "", ""))
    return base


def deployment_name(model: Model) -> str:
    """The deployment the request goes to (see the module doc)."""
    configured = (model.compat or {}).get("azure_deployment")
    if isinstance(configured, str) and configured:
        return configured
    for entry in _env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP").split(","):
        model_id, _, deployment = entry.partition("=")
        if model_id.strip() == model.id and deployment.strip():
            return deployment.strip()
    return model.id


def _api_version(model: Model) -> str:
    configured = (model.compat or {}).get("azure_api_version")
    fallback = configured if isinstance(configured, str) and configured else DEFAULT_API_VERSION
    return _env("AZURE_OPENAI_API_VERSION") or fallback


def build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> WireRequest:
    """The HTTP request for one streamed Responses API response from an Azure deployment.

    Raises:
        ValueError: no Azure endpoint is configured (the stream reports it as its error).
    """
    url = f"{azure_base_url(model)}/responses?api-version={_api_version(model)}"
    body = responses_body(
        model, context, options, model_name=deployment_name(model), id_providers=_ID_PROVIDERS
    )
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["api-key"] = api_key
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    return WireRequest(url, headers, body)


stream_azure_openai_responses = WireApi(build_request, ResponsesDecoder, "azure-openai-responses")
"""Stream one azure-openai-responses response as pi_trio stream events; never raises for a
provider failure (see :func:`pi_trio.providers.stream_wire`)."""
