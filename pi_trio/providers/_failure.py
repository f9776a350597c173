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

from .._errors import PiError

__all__ = ["ERROR_TEXT_LIMIT", "ProviderFailure", "error_text", "redact", "shorten"]

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
    """

    def __init__(
        self, message: str, *, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


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


def error_text(body: str) -> str:
    """The provider's own error message from an error body: the ``error.message`` (with its
    type or code) of a JSON body, the ``error`` string of a simpler one, else the body as it
    is (whitespace runs collapsed). Not shortened: masking comes first."""
    text = body.strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
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
