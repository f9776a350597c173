"""When a failed attempt is tried again: the request policy, made once from ``StreamOptions``.

A request is retried (exponential backoff with jitter, or the server's Retry-After up to a
cap) on connection errors, first-byte timeouts and the statuses in :data:`RETRYABLE_STATUS`,
only before the first event has been handed out (see :func:`pi_trio.providers.stream_wire`)
and never past the overall deadline. The decision is pure: :meth:`RequestPolicy.retry_delay`
says how long to wait or raises the failure to report, with a note on why no retry was made.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import attrs

from ._failure import ProviderFailure
from ._options import StreamOptions

__all__ = ["RETRYABLE_STATUS", "RequestPolicy", "parse_retry_after"]

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Statuses worth retrying; 400/401/403/404 and the like never are."""


@attrs.frozen(kw_only=True)
class RequestPolicy:
    """Deadlines (seconds; ``None`` = no limit), retry budget and size limit of one request.

    ``timeout`` bounds the whole request, retries included; ``first_byte_timeout`` the wait
    for the response headers; ``idle_timeout`` the gap between two parsed events;
    ``max_event_bytes`` the largest SSE line or event accepted.
    """

    timeout: float | None = None
    first_byte_timeout: float | None = 60.0
    idle_timeout: float | None = 120.0
    max_retries: int = 2
    max_retry_delay: float = 60.0
    retry_base_delay: float = 0.5
    max_event_bytes: int = 8 * 1024 * 1024

    @classmethod
    def from_options(cls, options: StreamOptions) -> RequestPolicy:
        """The policy of one request made with ``options``."""
        return cls(
            timeout=options.timeout,
            first_byte_timeout=options.first_byte_timeout,
            idle_timeout=options.idle_timeout,
            max_retries=options.max_retries,
            max_retry_delay=options.max_retry_delay,
            max_event_bytes=options.max_event_bytes,
        )

    def deadline(self, now: float) -> float:
        """The overall deadline of a request started at ``now`` (``inf`` without a timeout)."""
        return math.inf if self.timeout is None else now + self.timeout

    def retry_delay(
        self, failure: ProviderFailure, *, attempt: int, now: float, deadline: float
    ) -> float:
        """Seconds to wait before attempt ``attempt + 1`` after ``failure`` ended ``attempt``.

        Raises:
            ProviderFailure: when no retry is allowed: ``failure`` itself, or (when the wait
                would exceed ``max_retry_delay`` or the deadline) a new failure chained from
                it whose message says why not.
        """
        if not failure.retryable or attempt > self.max_retries:
            raise failure
        if failure.retry_after is not None:
            if failure.retry_after > self.max_retry_delay:
                raise failure.saying(
                    f"{failure} (the server asked to retry after {failure.retry_after:g} s, "
                    f"more than max_retry_delay {self.max_retry_delay:g} s)"
                ) from failure
            delay = failure.retry_after
        else:
            backoff = self.retry_base_delay * 2 ** (attempt - 1)
            delay = min(self.max_retry_delay, backoff) * random.uniform(0.5, 1.0)
        if now + delay >= deadline:
            raise failure.saying(
                f"{failure} (no time left to retry within the overall timeout)"
            ) from failure
        return delay


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import datetime  # an HTTP date is rare: email and datetime load when one first comes
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
        now = datetime.datetime.now(datetime.UTC)
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        return max(0.0, (when - now).total_seconds())
    except (TypeError, ValueError, OverflowError):  # the year 10,000,000,000, say
        return None
