"""AWS for the Bedrock wire API: credentials, region, endpoint, SigV4, the binary event stream.

Nothing here implements cryptography or the frame checksums: botocore (the optional extra
``pi-trio[bedrock]``) signs (``botocore.auth.SigV4Auth``) and decodes frames
(``botocore.eventstream.EventStreamBuffer``: prelude and message CRCs, headers). It is
imported on the first Bedrock request; without it the request ends with an error saying
what to install.

Credentials, as pi-ai 0.73.1 takes them: a Bedrock bearer token (``StreamOptions.api_key``
or ``AWS_BEARER_TOKEN_BEDROCK``, sent as ``Authorization: Bearer``), else botocore's usual
chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` and the shared files, web identity, container and instance roles), read
in a worker thread because it may read files and call the instance metadata service, and
kept per process for the same environment (botocore renews expiring credentials itself).
``AWS_BEDROCK_SKIP_AUTH=1`` signs with dummy keys (a proxy that does its own auth).

Region: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's region, the region of a
standard ``bedrock-runtime.<region>.amazonaws.com`` base URL, else ``us-east-1``. The
model's ``base_url`` is used as it is unless it is a standard Bedrock endpoint and a
region or profile is configured (then the configured region's endpoint is used).
"""

from __future__ import annotations

import functools
import json
import os
import re
import struct
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import attrs
import trio

from ._failure import ProviderFailure
from ._sse import SSEEvent, SSELimitError
from ._sse_reader import Framing

__all__ = ["EVENTSTREAM_FRAMING", "AwsAuth", "EventStreamParser", "resolve_auth", "signed"]

INSTALL_HINT = "pip install 'pi-trio[bedrock]'"
_PLACEHOLDERS = ("<authenticated>",)
_STANDARD_ENDPOINT = re.compile(
    r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$"
)
_PRELUDE = 12  # total length, headers length, prelude CRC
_MIN_FRAME = 16  # prelude plus the message CRC


@attrs.frozen
class AwsAuth:
    """How one Bedrock request is authorized: a bearer token, or keys for SigV4."""

    region: str
    endpoint: str
    bearer_token: str | None = attrs.field(default=None, repr=False)
    access_key: str | None = attrs.field(default=None, repr=False)
    secret_key: str | None = attrs.field(default=None, repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never be shown: the token, the secret key, the session token."""
        found = (self.bearer_token, self.secret_key, self.session_token)
        return tuple(s for s in found if s)


def _botocore() -> Any:
    try:
        import botocore.session
    except ImportError as exc:
        raise ProviderFailure(
            "the bedrock-converse-stream API needs botocore for AWS credentials and "
            f"SigV4 signing: {INSTALL_HINT} (or set AWS_BEARER_TOKEN_BEDROCK)",
            kind="auth",
        ) from exc
    return botocore.session


def endpoint_region(base_url: str) -> str | None:
    """The region of a standard Bedrock runtime endpoint, else None."""
    host = (urlsplit(base_url).hostname or "").lower()
    match = _STANDARD_ENDPOINT.match(host)
    return match.group(1) if match else None


def _region_and_endpoint(base_url: str, profile_region: str | None) -> tuple[str, str]:
    configured = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    has_profile = bool(os.environ.get("AWS_PROFILE"))
    standard = endpoint_region(base_url)
    explicit = standard is None or (not configured and not has_profile)
    region = configured or (standard if explicit else None) or profile_region or "us-east-1"
    if explicit and base_url:
        return region, base_url.rstrip("/")
    return region, f"https://bedrock-runtime.{region}.amazonaws.com"


_CHAIN_VARIABLES = (  # what botocore's chain reads from the environment
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
)
_chains_lock = threading.Lock()
_chains: dict[tuple[str | None, ...], tuple[Any, str | None]] = {}


def _sync_credentials() -> tuple[Any, str | None]:
    """botocore's credential chain and the profile's region (blocking: a worker thread).

    The chain found is kept per process for the same environment: botocore's refreshable
    credentials (roles, SSO, ``credential_process``) renew themselves shortly before they
    expire, so a request does not assume a role or call a metadata service each time. A
    chain that found nothing is not kept (credentials configured later are seen)."""
    key = tuple(os.environ.get(name) for name in _CHAIN_VARIABLES)
    with _chains_lock:
        found = _chains.get(key)
        if found is None:
            session = _botocore().Session()
            region = session.get_config_variable("region")
            found = (session.get_credentials(), region if isinstance(region, str) else None)
            if found[0] is not None:
                _chains[key] = found
    credentials, region = found
    frozen = None if credentials is None else credentials.get_frozen_credentials()
    return frozen, region or None


async def resolve_auth(base_url: str, api_key: str | None) -> AwsAuth:
    """The credentials, region and endpoint of one Bedrock request.

    Runs botocore's credential chain in a worker thread. On cancellation the thread is
    abandoned: it finishes its file reads or metadata call on its own and its result is
    dropped (nothing is cached).

    Raises:
        ProviderFailure: no credentials anywhere (the message names the variables), or
            botocore is not installed when keys are needed.
    """
    bearer = (api_key or "").strip() or os.environ.get("AWS_BEARER_TOKEN_BEDROCK", "").strip()
    skip = os.environ.get("AWS_BEDROCK_SKIP_AUTH") == "1"
    if bearer and bearer not in _PLACEHOLDERS and not skip:
        region, endpoint = _region_and_endpoint(base_url, None)
        return AwsAuth(region, endpoint, bearer_token=bearer)
    if skip:
        region, endpoint = _region_and_endpoint(base_url, None)
        return AwsAuth(region, endpoint, access_key="dummy-access-key", secret_key="dummy-secret")
    frozen, profile_region = await trio.to_thread.run_sync(
        _sync_credentials, abandon_on_cancel=True
    )
    if frozen is None or not frozen.access_key or not frozen.secret_key:
        raise ProviderFailure(
            "No AWS credentials for provider amazon-bedrock (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK)",
            kind="auth",
        )
    region, endpoint = _region_and_endpoint(base_url, profile_region)
    return AwsAuth(
        region,
        endpoint,
        access_key=frozen.access_key,
        secret_key=frozen.secret_key,
        session_token=frozen.token or None,
    )


def converse_stream_url(endpoint: str, model_id: str) -> str:
    """``{endpoint}/model/{id}/converse-stream``, the id percent-encoded (``:`` and ``/``
    of inference-profile ARNs included)."""
    return f"{endpoint}/model/{quote(model_id, safe='')}/converse-stream"


def signed(auth: AwsAuth, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
    """``headers`` plus the authorization for a POST of ``body`` to ``url``: the bearer
    token, or botocore's SigV4 headers (``Authorization``, ``X-Amz-Date``, and
    ``X-Amz-Security-Token`` for temporary keys) for the service "bedrock"."""
    out = dict(headers)
    if auth.bearer_token is not None:
        out["authorization"] = f"Bearer {auth.bearer_token}"
        return out
    _botocore()
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    credentials = Credentials(auth.access_key, auth.secret_key, auth.session_token)
    request = AWSRequest(method="POST", url=url, data=body, headers=out)
    SigV4Auth(credentials, "bedrock", auth.region).add_auth(request)
    return {name: str(value) for name, value in request.headers.items()}


# --- the binary event stream ---------------------------------------------------


@functools.cache
def _decoder_types() -> tuple[Any, type[Exception]]:
    from botocore import eventstream

    return eventstream.EventStreamBuffer, eventstream.ParserError


class EventStreamParser:
    """``application/vnd.amazon.eventstream`` bytes -> events, one per frame.

    The frames are cut here by their length prefix (so a frame over ``max_event_bytes`` is
    refused before it is buffered) and decoded by botocore, which checks both CRCs. An
    event frame becomes ``SSEEvent(event=<:event-type>, data=<payload>)``; an exception
    frame ``SSEEvent(event="exception:<:exception-type>", ...)``; an error frame
    ``SSEEvent(event="error:<:error-code>", data=<:error-message>)``. Bytes left at the end
    of the body (a frame cut short) are dropped: the decoder then reports the missing end.

    Raises:
        SSELimitError: a frame longer than ``max_event_bytes``.
        ProviderFailure: a frame that is not valid (bad length or checksum, bad headers).
    """

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes
        self._buffer = bytearray()
        buffer_type, self._parser_error = _decoder_types()
        self._decoder = buffer_type()  # handed whole frames only

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buffer = self._buffer
        buffer += chunk
        events: list[SSEEvent] = []
        while len(buffer) >= 4:
            total = int.from_bytes(buffer[:4], "big")
            if total < _MIN_FRAME:
                raise ProviderFailure(
                    f"invalid event-stream frame: a length of {total} bytes", kind="protocol"
                )
            if total > self.max_event_bytes:
                raise SSELimitError(f"an event-stream frame of {total} bytes (max_event_bytes)")
            if len(buffer) < total:
                break
            if len(buffer) == total:
                frame = bytes(buffer)
                buffer.clear()
            else:
                frame = bytes(buffer[:total])
                del buffer[:total]
            events.append(self._decode(frame))
        return events

    def close(self) -> list[SSEEvent]:
        self._buffer.clear()
        return []

    def _decode(self, frame: bytes) -> SSEEvent:
        decoder = self._decoder
        decoder.add_data(frame)
        try:  # botocore's decoder raises more than ParserError for a mangled frame
            message = next(decoder)
        except (self._parser_error, StopIteration, UnicodeDecodeError, KeyError, ValueError,
                struct.error) as exc:  # fmt: skip
            raise ProviderFailure(
                f"invalid event-stream frame: {type(exc).__name__}: {exc}", kind="protocol"
            ) from exc
        headers = {
            key: value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
            for key, value in message.headers.items()
        }
        payload = bytes(message.payload).decode("utf-8", errors="replace")
        kind = headers.get(":message-type", "event")
        if kind == "exception":
            return SSEEvent(payload, f"exception:{headers.get(':exception-type', '')}")
        if kind == "error":
            text = json.dumps({"message": headers.get(":error-message", "")})
            return SSEEvent(text, f"error:{headers.get(':error-code', '')}")
        return SSEEvent(payload, str(headers.get(":event-type", "")))


def _eventstream_parser(max_event_bytes: int) -> EventStreamParser:
    return EventStreamParser(max_event_bytes)


EVENTSTREAM_FRAMING = Framing("application/vnd.amazon.eventstream", _eventstream_parser)
"""AWS's binary event stream, as Bedrock's ConverseStream answers."""
