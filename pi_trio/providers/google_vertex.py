"""The "google-vertex" wire API: Gemini on Vertex AI.

The body and the events are Gemini's, so the request body and the decoder are those of
:mod:`.google` (shared code); what differs is where the request goes and how it is
authorized, as pi-ai 0.73.1 (through ``@google/genai``) does it:

* an API key (``StreamOptions.api_key`` or ``GOOGLE_CLOUD_API_KEY``: Vertex "express
  mode") goes in ``x-goog-api-key`` to
  ``https://aiplatform.googleapis.com/v1/publishers/google/models/{id}:streamGenerateContent``;
* otherwise Google's application-default credentials (``GOOGLE_APPLICATION_CREDENTIALS``
  or gcloud's ``application_default_credentials.json``, through google-auth: the optional
  extra ``pi-trio[vertex]``) give a bearer token, and the project and location
  (``GOOGLE_CLOUD_PROJECT`` or ``GCLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``) pick
  ``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/
  publishers/google/models/{id}:streamGenerateContent`` (``aiplatform.googleapis.com`` for
  "global"). A ``base_url`` holding ``{location}`` is that template; any other
  ``base_url`` is used as the collection itself (``{base_url}/v1/publishers/google/models/
  ...``, ``v1`` left out when the URL names a version), as the SDK does.

Fetching or refreshing the token is blocking (google-auth calls the token endpoint with
``requests``), so it runs in a worker thread; the credentials are kept per process and
refreshed when they expire. The token is masked in every error and log record. A fetch that
failed in transit is retryable (``stream_wire`` tries it again, as a failed request).
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any
from urllib.parse import urlsplit

import attrs
import trio

from ..messages import Context
from ..models import Model
from ._failure import ProviderFailure
from ._options import StreamOptions
from ._stream import PreparedWireApi, WireRequest
from .google import GoogleDecoder, build_request

__all__ = ["prepare_request", "stream_google_vertex", "vertex_url"]

INSTALL_HINT = "pip install 'pi-trio[vertex]'"
DEFAULT_BASE_URL = "https://{location}-aiplatform.googleapis.com"
_EXPRESS_BASE_URL = "https://aiplatform.googleapis.com"
_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
_MARKERS = ("gcp-vertex-credentials", "<authenticated>")
_MULTI_REGIONAL = frozenset({"us", "eu"})
_VERSION_PART = re.compile(r"^v\d+(?:beta\d*)?$")

_lock = threading.Lock()
_credentials: dict[str | None, Any] = {}  # GOOGLE_APPLICATION_CREDENTIALS -> google-auth's
_FETCHING: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("pi_trio_vertex")


def _fetch_limiter() -> trio.CapacityLimiter:
    """One token-fetching thread at a time per Trio run: the others wait in Trio, where they
    can be cancelled, not in threads blocked on ``_lock``, and a fetch abandoned at a deadline
    (its thread runs on to google-auth's own timeout) holds no other thread."""
    try:
        return _FETCHING.get()
    except LookupError:
        limiter = trio.CapacityLimiter(1)
        _FETCHING.set(limiter)
        return limiter


def _api_key(options: StreamOptions) -> str | None:
    key = (options.api_key or os.environ.get("GOOGLE_CLOUD_API_KEY") or "").strip()
    if not key or key in _MARKERS or (key.startswith("<") and key.endswith(">")):
        return None
    return key


def _custom_base(base_url: str) -> str | None:
    trimmed = base_url.strip()
    return None if not trimmed or "{location}" in trimmed else trimmed.rstrip("/")


def _versioned(base: str) -> str:
    has_version = any(_VERSION_PART.match(part) for part in urlsplit(base).path.split("/"))
    return base if has_version else f"{base}/v1"


def _location_base(template: str, location: str) -> str:
    """The SDK's host for a location with the default template; any other template gets
    ``{location}`` filled in."""
    if template.rstrip("/") == DEFAULT_BASE_URL:
        if location == "global":
            return _EXPRESS_BASE_URL
        if location in _MULTI_REGIONAL:
            return f"https://aiplatform.{location}.rep.googleapis.com"
    return template.replace("{location}", location).rstrip("/")


def vertex_url(model: Model, *, project: str | None, location: str | None) -> str:
    """The streamGenerateContent URL of ``model``: express mode when ``project`` is None."""
    tail = f"publishers/google/models/{model.id}:streamGenerateContent?alt=sse"
    custom = _custom_base(model.base_url)
    if custom is not None:
        return f"{_versioned(custom)}/{tail}"
    if project is None or location is None:
        return f"{_EXPRESS_BASE_URL}/v1/{tail}"
    base = _location_base(model.base_url or DEFAULT_BASE_URL, location)
    return f"{base}/v1/projects/{project}/locations/{location}/{tail}"


def _project_and_location() -> tuple[str, str]:
    project = os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("GCLOUD_PROJECT")
    if not project:
        raise ProviderFailure(
            "Vertex AI requires a project ID: set GOOGLE_CLOUD_PROJECT or GCLOUD_PROJECT "
            "(or GOOGLE_CLOUD_API_KEY for express mode)",
            kind="auth",
        )
    location = os.environ.get("GOOGLE_CLOUD_LOCATION")
    if not location:
        raise ProviderFailure(
            "Vertex AI requires a location: set GOOGLE_CLOUD_LOCATION (e.g. us-central1 or global)",
            kind="auth",
        )
    return project, location


def _sync_token() -> str:
    """A valid access token from the application-default credentials (blocking)."""
    try:
        import google.auth
        import google.auth.exceptions
        import google.auth.transport.requests
    except ImportError as exc:
        raise ProviderFailure(
            "the google-vertex API needs google-auth for application-default credentials: "
            f"{INSTALL_HINT} (or set GOOGLE_CLOUD_API_KEY)",
            kind="auth",
        ) from exc
    where = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    with _lock:
        try:
            credentials = _credentials.get(where)
            if credentials is None:
                credentials, _ = google.auth.default(scopes=list(_SCOPES))
                _credentials[where] = credentials
            if not credentials.valid:
                credentials.refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise ProviderFailure(
                "No Google application-default credentials for provider google-vertex (run "
                "`gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS "
                f"to a credentials file, or set GOOGLE_CLOUD_API_KEY): {exc}",
                kind="auth",
            ) from exc
        except google.auth.exceptions.GoogleAuthError as exc:
            raise ProviderFailure(
                f"fetching a Google access token failed: {type(exc).__name__}: {exc}",
                kind="auth",
                retryable=isinstance(exc, google.auth.exceptions.TransportError),
            ) from exc
        return str(credentials.token)


async def prepare_request(model: Model, context: Context, options: StreamOptions) -> WireRequest:
    """The Gemini request of :mod:`.google`, sent to Vertex with its authorization.

    Checkpoint. Without an API key, the token is fetched in a worker thread (one at a time,
    see :func:`_fetch_limiter`); cancelled, the thread is abandoned and finishes its HTTP call
    on its own (the credentials it refreshes are kept for the next request).

    Raises:
        ProviderFailure: no project, location or credentials (naming what to set), or
            google-auth is not installed (naming what to install).
    """
    key = _api_key(options)
    request = build_request(model, context, options, key or "")
    if key is not None:
        url = vertex_url(model, project=None, location=None)
        return attrs.evolve(request, url=url, secrets=(key,))  # masked, also from the env
    project, location = _project_and_location()
    fetching = _fetch_limiter()
    token = await trio.to_thread.run_sync(_sync_token, abandon_on_cancel=True, limiter=fetching)
    headers = {**request.headers, "authorization": f"Bearer {token}"}
    url = vertex_url(model, project=project, location=location)
    return attrs.evolve(request, url=url, headers=headers, secrets=(token,))


def forget_credentials() -> None:
    """Drop the kept credentials (the next request reads the ADC file again)."""
    with _lock:
        _credentials.clear()


stream_google_vertex = PreparedWireApi(prepare_request, GoogleDecoder, "google-vertex")
"""Stream one google-vertex response as pi_trio stream events; never raises for a provider
failure, a missing credential or a missing google-auth included."""
