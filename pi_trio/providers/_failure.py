"""What a failed request says: :class:`ProviderFailure`, key masking and the provider's own text.

A failure's message is built where the failure is seen (the transport, the SSE reader, a
decoder) and becomes the error_message of the stream's ``StreamError`` in one place,
:func:`pi_trio.providers.stream_wire`, which masks every secret in it with :func:`redact` and
only then shortens it (a key cut in half by the length limit would no longer match).

Masking covers every way a server may echo a key back: as sent, JSON-escaped (``\\/`` for
``/``, ``\\u002b`` for ``+``, even escaped twice), URL-encoded (``%2F``, ``%252F``), in any mix.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

from .._errors import PiError, ProviderErrorKind

__all__ = [
    "ERROR_TEXT_LIMIT",
    "ProviderFailure",
    "error_code",
    "error_text",
    "kind_of_code",
    "kind_of_status",
    "redact",
    "shorten",
]

ERROR_TEXT_LIMIT = 2000
"""Characters of an error_message kept (after masking)."""

_REDACTED = "***"
_MIN_SECRET = 4  # shorter strings are not masked: they would match everywhere
_CONTROL_ESCAPES = {"\n": "n", "\r": "r", "\t": "t"}


class ProviderFailure(PiError):
    """A request that failed; ``str(exc)`` becomes the stream's error_message.

    Internal to the wire streams: :func:`pi_trio.providers.stream_wire` turns it into a
    ``StreamError`` (masking secrets on the way), so callers of a stream function never see
    it raised. A :class:`pi_trio.providers.Decoder` raises it for an error the provider
    reported inside the stream. The message may still hold a secret until it is masked.

    Args:
        message: what happened, for the user.
        retryable: whether trying the request again could help.
        retry_after: the server's requested wait in seconds, when it sent one.
        kind: the ``pt.ProviderError`` kind it becomes.
        status: the HTTP status, when a response came.
        code: the provider's own error code or type, when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        kind: ProviderErrorKind = "server",
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.kind: ProviderErrorKind = kind
        self.status = status
        self.code = code

    def saying(self, message: str) -> ProviderFailure:
        """The same failure (kind, status, code, retry facts) with another message."""
        return ProviderFailure(
            message,
            retryable=self.retryable,
            retry_after=self.retry_after,
            kind=self.kind,
            status=self.status,
            code=self.code,
        )


def text_piece(value: object, what: str) -> str:
    """``value``, a piece of streamed text (``what`` names it: "a text delta"). Anything but a
    string is the provider's mistake and fails the response: appended as it was, it would
    leave a message that cannot be read, encoded or sent again, and the session with it."""
    if type(value) is str:
        return value
    raise ProviderFailure(
        f"the provider sent {what} that is not text: {shorten(repr(value), 80)}",
        kind="protocol",
    )


def in_stream_error(
    error: object, code_keys: tuple[str, ...] = ("type", "code")
) -> ProviderFailure:
    """The failure an error reported inside a stream stands for, whatever its shape: an
    object with a ``message`` (and a code under one of ``code_keys``), a string, or anything
    else (shown as JSON)."""
    code: str | None = None
    if isinstance(error, dict):
        found = [error.get(key) for key in code_keys]
        code = next((value for value in found if isinstance(value, str) and value), None)
        message = error.get("message")
        text = message if isinstance(message, str) and message else json.dumps(error)
    else:
        text = error if isinstance(error, str) and error else json.dumps(error)
    suffix = f" ({code})" if code else ""
    return ProviderFailure(
        f"provider error in stream: {text}{suffix}", kind=kind_of_code(code), code=code
    )


def kind_of_status(status: int) -> ProviderErrorKind:
    """The ``pt.ProviderError`` kind of an HTTP error status."""
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status == 408:
        return "timeout"
    if status in (503, 529):
        return "overloaded"
    if status >= 500:
        return "server"
    return "bad_request"


def kind_of_code(code: str | None, default: ProviderErrorKind = "server") -> ProviderErrorKind:
    """The kind of an error a provider reported by its code or type alone (an error event)."""
    text = (code or "").lower()
    if "overloaded" in text or text == "unavailable" or "capacity" in text:
        return "overloaded"
    if "rate_limit" in text or "rate limit" in text or text == "resource_exhausted":
        return "rate_limit"
    if "auth" in text or "permission" in text or "api_key" in text:
        return "auth"
    if "invalid" in text or "not_found" in text or "bad_request" in text:
        return "bad_request"
    if "timeout" in text or "deadline" in text:
        return "timeout"
    return default


def _hex(code: int, width: int) -> str:
    """``code`` in hex as a pattern matching either letter case."""
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in f"{code:0{width}x}")


@functools.lru_cache(maxsize=64)
def _pattern(secret: str) -> re.Pattern[str]:
    """A pattern for ``secret`` in any mix of raw, JSON-escaped and URL-encoded characters."""
    pieces = []
    for char in secret:
        code = ord(char)
        options = [re.escape(char)]
        if code < 0x10000:
            options.append(r"\\+u" + _hex(code, 4))  # JSON \u00xx, also escaped again
        if not char.isalnum():
            options.append(r"\\+" + re.escape(_CONTROL_ESCAPES.get(char, char)))  # \/ \" \n
        options.append("".join("%(?:25)*" + _hex(byte, 2) for byte in char.encode()))  # %2F
        pieces.append("(?:" + "|".join(options) + ")")
    return re.compile("".join(pieces))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each secret (of 4 characters or more) replaced by
    ``***``, in whichever encoding a server may echo it (see the module docstring); a secret
    with stray surrounding whitespace is also masked without it."""
    for secret in secrets:
        if not secret:
            continue
        for candidate in {secret, secret.strip()}:
            if len(candidate) >= _MIN_SECRET:
                text = _pattern(candidate).sub(_REDACTED, text)
    return text


def shorten(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, marked with "..." when cut. Mask before this."""
    return text if len(text) <= limit else text[:limit] + "..."


def error_code(body: str) -> str | None:
    """The provider's own error code or type from a JSON error body (``error.code``,
    ``error.type`` or ``error.status``), else None."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: 60,000 "["
        return None
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        for key in ("code", "type", "status"):
            value = error.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                return str(value)
    return None


def error_text(body: str) -> str:
    """The provider's own error message from an error body: the ``error.message`` (with its
    type or code) of a JSON body, the ``error`` string of a simpler one, else the body as it
    is (whitespace runs collapsed). Not shortened: masking comes first."""
    text = body.strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return " ".join(text.split())
    if isinstance(data, list) and data:
        data = data[0]  # Google sometimes wraps the error in a list
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message")
            kind = error.get("type") or error.get("status") or error.get("code")
            if isinstance(message, str) and message:
                return f"{message} ({kind})" if isinstance(kind, str) and kind else message
        elif isinstance(error, str) and error:
            return error
    return text
