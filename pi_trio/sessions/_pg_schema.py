"""The PostgreSQL backend's tables, SQL and messages (see :mod:`._postgres`)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

import outcome

from .._errors import SessionBusyError, SessionLogError
from ._backend import SCHEMA_VERSION, Lease

__all__ = [
    "APPLICATION",
    "CHANNEL",
    "INSERT",
    "INSERT_CHECKED",
    "LAST_SEEN",
    "LOCK_KEY",
    "NOW",
    "SCHEMA",
    "check_leases",
    "check_or_create",
    "columns",
    "import_psycopg",
    "lost",
    "redact",
    "scrub",
]

APPLICATION = "pi_trio.sessions"
NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
LOCK_KEY = 0x7069_7472_696F  # "pitrio": serialises schema creation between processes
CHANNEL = "pi_trio_inbox"

SCHEMA = """
CREATE TABLE pi_trio_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE pi_trio_sessions (
    session_id text PRIMARY KEY,
    created bigint NOT NULL,
    epoch bigint NOT NULL,
    holder text,
    holder_pid bigint,
    holder_start text,
    lease_expires bigint,
    pending boolean NOT NULL DEFAULT false
);
CREATE INDEX pi_trio_sessions_pending ON pi_trio_sessions (session_id) WHERE pending;
CREATE TABLE pi_trio_entries (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    kind text NOT NULL,
    data json NOT NULL,
    time bigint NOT NULL,
    epoch bigint NOT NULL,
    version integer NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE pi_trio_inbox (
    id bigserial PRIMARY KEY,
    session_id text NOT NULL,
    kind text NOT NULL,
    data json NOT NULL,
    time bigint NOT NULL
);
CREATE INDEX pi_trio_inbox_session ON pi_trio_inbox (session_id, id);
"""

# A whole group commit in one statement (one round trip, its own transaction): the sessions'
# rows locked FOR SHARE (a takeover in flight is waited for, then seen), and only the rows of
# leases still current (epoch, holder, not expired) inserted; RETURNING tells which went in
# (by session and epoch: an old holder's append may share a batch with the new holder's).
# The arrays go in binary (%b): text arrays in text format cost a regex escape per element
# (JSON is full of quotes), measured at a fifth of a worker's CPU per turn.
INSERT_CHECKED = (
    "WITH live AS (SELECT session_id, epoch, holder FROM pi_trio_sessions "
    f"WHERE session_id = ANY(%b) AND lease_expires > {NOW} FOR SHARE) "
    "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
    "SELECT r.s, r.q, r.k, r.d::json, r.t, r.e, r.v FROM unnest(%b::text[], %b::bigint[], "
    "%b::text[], %b::text[], %b::bigint[], %b::bigint[], %b::int[], %b::text[]) "
    "AS r(s, q, k, d, t, e, v, h) JOIN live ON live.session_id = r.s AND live.epoch = r.e "
    "AND live.holder = r.h RETURNING session_id, epoch"
)
# per session: the last seq of its log and its newest inbox row's id (both indexed look-ups)
LAST_SEEN = (
    "SELECT s, (SELECT max(seq) FROM pi_trio_entries WHERE session_id = s), (SELECT max(id) "
    "FROM pi_trio_inbox WHERE session_id = s) FROM unnest(%s::text[]) AS s"
)
INSERT = (
    "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
    "SELECT s, q, k, d::json, t, e, v FROM unnest(%b::text[], %b::bigint[], %b::text[], "
    "%b::text[], %b::bigint[], %b::bigint[], %b::int[]) AS r(s, q, k, d, t, e, v)"
)


_USER_INFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^@]*)@")
"""The user info of a URL: up to its first "@", whatever it holds. libpq reads a password up
to there, "?" and "#" included; a "/" ends a URL's authority for ``urlsplit`` and for libpq,
which then quotes the rest as a host or port in its error, so it is masked too."""


_SECRET_KEYS = frozenset({"password", "sslpassword"})
"""Connection parameters whose value is a secret (libpq decodes a key's %-escapes, so
``%70assword`` is ``password`` too)."""


def _secret_item(item: str) -> bool:
    key = urllib.parse.unquote_plus(item.partition("=")[0]).strip().lower()
    return key in _SECRET_KEYS


def _secrets(url: str) -> set[str]:
    """The secrets ``url`` holds: its user-info password and its secret query parameters'
    values, each as written and %-decoded."""
    found = _USER_INFO.match(url)
    values = [found.group(1).partition(":")[2]] if found is not None else []
    query = url.partition("?")[2].partition("#")[0]
    values += [item.partition("=")[2] for item in query.split("&") if _secret_item(item)]
    return {form for value in values for form in (value, urllib.parse.unquote(value))} - {""}


def redact(url: str) -> str:
    """``url`` without its password (for messages, logs and ``description``)."""
    found = _USER_INFO.match(url)
    if found is not None and ":" in found.group(1):
        user = found.group(1).partition(":")[0]
        url = url[: found.start(1)] + user + url[found.end(1) :]
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "postgresql://(unparsable URL)"
    netloc = parts.netloc
    query = "&".join(item for item in parts.query.split("&") if not _secret_item(item))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "a postgresql:// session store needs psycopg 3: pip install 'pi-trio[postgres]'"
        ) from None
    return psycopg


def scrub(text: str, url: str) -> str:
    """An error text from libpq with any password of ``url`` taken out (belt and braces)."""
    for secret in sorted(_secrets(url), key=len, reverse=True):  # also of a URL urlsplit refuses
        text = text.replace(secret, "***")
    return re.sub(r"(?i)password=\S+", "password=***", text)


def lost(lease: Lease, epoch: int | None, *, expired: bool) -> SessionBusyError:
    if epoch is None:
        now = "the session was deleted"
    elif expired:
        now = "its lease expired"
    else:
        now = f"the session is now at epoch {epoch}"
    return SessionBusyError(
        f"session {lease.session_id!r}: this holder lost it (its lease is epoch {lease.epoch}; "
        f"{now}); nothing more was written",
        session_id=lease.session_id,
    )


def _refuse(description: str, why: str) -> SessionLogError:
    return SessionLogError(
        f"{description} is not a pi_trio session store ({why}); give "
        "open_session_store() another database",
        problem=why,
    )


def check_or_create(conn: Any, description: str) -> None:
    """Create the tables in a new database; refuse another application's or a newer one's."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_name LIKE 'pi\\_trio\\_%%'"
            )
        }
        if not tables:
            conn.execute(SCHEMA)
            conn.execute(
                "INSERT INTO pi_trio_meta (key, value) VALUES ('application', %s), "
                "('schema_version', %s)",
                (APPLICATION, str(SCHEMA_VERSION)),
            )
            return
        if "pi_trio_meta" not in tables:
            raise _refuse(description, "pi_trio tables without pi_trio_meta")
        meta = dict(conn.execute("SELECT key, value FROM pi_trio_meta").fetchall())
    if meta.get("application") != APPLICATION:
        raise _refuse(description, f"its application is {meta.get('application')!r}")
    version = int(meta.get("schema_version", "0"))
    if version > SCHEMA_VERSION:
        raise SessionLogError(
            f"{description} was written by a newer pi_trio (store schema {version}, "
            f"this one reads {SCHEMA_VERSION}); upgrade pi_trio",
            problem=f"schema version {version}",
        )


def columns(group: Sequence[Any], *, holders: bool) -> list[list[Any]]:
    """The rows of append requests (``args``: lease, rows, inbox) as INSERT's column arrays:
    session, seq, kind, data, time, epoch, version (and the holder's token)."""
    out: list[list[Any]] = [[] for _ in range(8 if holders else 7)]
    for request in group:
        lease, rows = request.args[0], request.args[1]
        head = (lease.session_id,)
        tail = (lease.epoch, lease.holder.token) if holders else (lease.epoch,)
        for seq, kind, data, when, version in rows:
            for column, value in zip(
                out, (*head, seq, kind, data, when, tail[0], version, *tail[1:]), strict=True
            ):
                column.append(value)
    return out


def check_leases(conn: Any, group: Sequence[Any]) -> list[Any]:
    """Lock the sessions of append requests (``FOR SHARE``) and keep the requests whose lease
    is current (epoch, holder, not expired); the others get their lost-lease error."""
    ids = sorted({request.args[0].session_id for request in group})
    found = {
        sid: (epoch, holder, live)
        for sid, epoch, holder, live in conn.execute(
            f"SELECT session_id, epoch, holder, coalesce(lease_expires > {NOW}, false) "
            "FROM pi_trio_sessions WHERE session_id = ANY(%s) ORDER BY session_id FOR SHARE",
            (ids,),
        )
    }
    ready = []
    for request in group:
        lease: Lease = request.args[0]
        epoch, holder, live = found.get(lease.session_id, (None, None, False))
        if epoch == lease.epoch and holder == lease.holder.token and live:
            ready.append(request)
        else:
            request.result = outcome.Error(lost(lease, epoch, expired=epoch == lease.epoch))
    return ready
