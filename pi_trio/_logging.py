"""The ``pi_trio`` loggers, and the rule that each failure is logged once.

Hierarchy (configure ``logging.getLogger("pi_trio")`` to get them all)::

    pi_trio.loop        a hook, the event sink or the stream function failed: the run ends (ERROR)
    pi_trio.agent       a listener or the recorder failed (ERROR); a dropped events() reader
    pi_trio.tools       a tool or its hooks raised: the model sees the error (WARNING);
                        a tool timed out, arguments did not validate (INFO)
    pi_trio.providers   a model request failed (ERROR); a retry (INFO)
    pi_trio.sessions    a commit, a served session or a claim for work failed (ERROR); a lease
                        renewal or a give-back failed, a worker lost its session (WARNING)
    pi_trio.cli         an RPC connection failed and was closed (ERROR)
    pi_trio.mcp         an MCP server's tool was left out (WARNING); a connection or its
                        transport failed (DEBUG)
    pi_trio.proxy       a proxied request failed (ERROR); each request and its outcome (INFO)

Records are made on failure paths (and by the proxy once per request), never per streamed
delta. A failure travels through several layers (a listener's exception is logged by the agent,
then ends the run in the loop): :func:`log_failure` marks the exception so that only the first
layer logs it, with its traceback. Provider records never hold an API key (see
``pi_trio.providers``).
"""

from __future__ import annotations

import contextlib
import logging

__all__ = [
    "agent_logger",
    "cli_logger",
    "log_failure",
    "loop_logger",
    "mark_logged",
    "mcp_logger",
    "providers_logger",
    "proxy_logger",
    "sessions_logger",
    "tools_logger",
]

loop_logger = logging.getLogger("pi_trio.loop")
agent_logger = logging.getLogger("pi_trio.agent")
tools_logger = logging.getLogger("pi_trio.tools")
providers_logger = logging.getLogger("pi_trio.providers")
sessions_logger = logging.getLogger("pi_trio.sessions")
cli_logger = logging.getLogger("pi_trio.cli")
mcp_logger = logging.getLogger("pi_trio.mcp")
proxy_logger = logging.getLogger("pi_trio.proxy")

_MARK = "__pi_trio_logged__"


def mark_logged(exc: BaseException) -> None:
    """Say that ``exc`` was reported (logged, or raised to the one who must hear of it), so
    that :func:`log_failure` does not log it again on its way out."""
    with contextlib.suppress(AttributeError, TypeError):
        setattr(exc, _MARK, True)


def log_failure(
    logger: logging.Logger, level: int, exc: BaseException, message: str, *args: object
) -> bool:
    """Log ``exc`` with its traceback at ``level``, unless a layer has logged it already.

    Returns whether a record was made. The mark is an attribute on the exception (an
    exception that refuses attributes is logged each time it is seen).
    """
    if getattr(exc, _MARK, False):
        return False
    mark_logged(exc)
    logger.log(level, message, *args, exc_info=exc, stacklevel=2)  # the caller's line
    return True
