"""The SQLite store's tables and its insert statements (:mod:`._sqlite`)."""

from __future__ import annotations

__all__ = [
    "APPLICATION",
    "INSERT",
    "INSERT_CHECKED",
    "SCHEMA",
    "VALUES_ROWS",
    "values_insert",
]

APPLICATION = "pi_trio.sessions"

SCHEMA = """
CREATE TABLE pi_trio_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pi_trio_sessions (
    session_id TEXT PRIMARY KEY,
    created INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    holder TEXT,
    holder_pid INTEGER,
    holder_start TEXT,
    lease_expires INTEGER
);
CREATE TABLE pi_trio_entries (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    time INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
"""
# WITHOUT ROWID keeps each session's rows together: a resume or a delete reads a few pages.
# A rowid table costs the store thread a third per row in a grouped commit of many sessions
# (no page split per session), but it scatters a session's rows: in a store of 1,000
# interleaved sessions a cold resume took 98 ms against 17, a delete 51 ms against 2.5, and
# the file grew under churn (docs/benchmarks.md, "The log as a rowid table").

INSERT = (
    "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# A whole commit in one statement (see SqliteBackend._append_group): the rows come as one
# JSON array, and the join keeps only those whose epoch is still their session's, in the same
# transaction. json_each needs SQLite's JSON functions (built in since 3.38; often before).
INSERT_CHECKED = (
    "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
    "SELECT json_extract(r.value, '$[0]'), json_extract(r.value, '$[1]'), "
    "json_extract(r.value, '$[2]'), json_extract(r.value, '$[3]'), "
    "json_extract(r.value, '$[4]'), json_extract(r.value, '$[5]'), "
    "json_extract(r.value, '$[6]') FROM json_each(?) AS r JOIN pi_trio_sessions AS s "
    "ON s.session_id = json_extract(r.value, '$[0]') AND s.epoch = json_extract(r.value, '$[5]')"
)
VALUES_ROWS = 64
"""A commit of at most this many rows binds them as the parameters of one ``VALUES`` statement
(one text per row count, which sqlite3's statement cache keeps prepared): no JSON to encode
here or for SQLite to parse, about half the cost of the JSON statement for a turn's commit.
A bigger one (many sessions' appends at once) goes as one JSON array (``INSERT_CHECKED``)."""
_values_inserts: dict[int, str] = {}


def values_insert(count: int) -> str:
    """``INSERT_CHECKED`` for ``count`` rows given as parameters (7 a row)."""
    statement = _values_inserts.get(count)
    if statement is None:
        rows = ",".join(["(?,?,?,?,?,?,?)"] * count)
        statement = _values_inserts[count] = (
            "INSERT INTO pi_trio_entries (session_id, seq, kind, data, time, epoch, version) "
            f"SELECT v.* FROM (VALUES {rows}) AS v JOIN pi_trio_sessions AS s "
            "ON s.session_id = v.column1 AND s.epoch = v.column6"
        )
    return statement
