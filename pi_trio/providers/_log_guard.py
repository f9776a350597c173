"""Keeps the secrets of requests in flight out of httpx's and httpcore's log records (and
botocore's and google-auth's, which sign and fetch the cloud APIs' credentials).

At DEBUG level httpcore logs each step of a request, with the response headers and the text
of any exception (an h11 error quotes the offending header value); httpx logs every URL at
INFO. A server may echo a key in a header, a URL may carry one. While a wire stream runs,
its secrets are registered here (:func:`guard_secrets`), and a :class:`logging.Filter` on
those libraries' loggers rewrites any record that mentions one, in any encoding
:func:`._failure.redact` knows, with the secret masked. The filter costs nothing while no
record is emitted (the libraries check the level first) and little when none matches.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ._failure import redact

__all__ = ["guard_secrets"]

_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "hpack",
    "hpack.hpack",
    "hpack.table",
    "httpx2",  # the same stack, renamed (an httpx2.AsyncClient)
    "httpcore2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
    "botocore.auth",  # SigV4's canonical request holds the session token at DEBUG
    "botocore.credentials",
    "botocore.utils",
    "google.auth._default",
    "google.auth.transport.requests",
    "google.oauth2._client",
    "urllib3.connectionpool",
)
_active: Counter[str] = Counter()


class _SecretFilter(logging.Filter):
    """Masks active secrets in a record's message and arguments (keeps every record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _active:
            return True
        try:
            secrets = tuple(_active)
            message = record.getMessage()
            masked = redact(message, secrets)
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            if masked != message or any(redact(str(a), secrets) != str(a) for a in args if a):
                record.msg, record.args = masked, None
        except Exception:  # a filter must never break the library that logs
            record.msg, record.args = (
                "(message withheld: it could not be checked for secrets)",
                None,
            )
        return True


_FILTER = _SecretFilter()
_installed = False


def _install() -> None:
    global _installed
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(_FILTER)  # addFilter ignores a second add
    _installed = True


@contextmanager
def guard_secrets(secrets: Iterable[str]) -> Iterator[None]:
    """Mask ``secrets`` in httpx/httpcore/hpack log records while the block runs."""
    if not _installed:
        _install()
    held = [s for s in secrets if s]
    _active.update(held)
    try:
        yield
    finally:
        _active.subtract(held)
        for secret in held:
            if _active[secret] <= 0:
                del _active[secret]
