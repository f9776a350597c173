"""Durable sessions: an append-only session log (SQLite by default), resume, crash repair.

``async with pt.open_session_store(path) as store`` opens a store;
``async with store.open_agent(id, initial_state=..., **agent_options) as agent`` is a
:class:`pt.Agent` whose session lives in the store (created, or resumed from its log and
repaired). See docs/sessions.md for what is durable when and what a crash can lose, and
docs/many-agents.md for PostgreSQL stores, ``store.enqueue`` and :func:`serve_sessions`.
"""

from __future__ import annotations

from ._backend import (
    SCHEMA_VERSION,
    Holder,
    Lease,
    SessionBackend,
    SessionInfo,
    SessionLookup,
)
from ._entries import ENTRY_KINDS, FORMAT_VERSION, SessionEntry
from ._open import open_session_store
from ._recorder import SessionRecorder
from ._repair import (
    NOT_STARTED_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    PROCESS_STOPPED_TEXT,
    repair_transcript,
)
from ._serve import serve_sessions
from ._sqlite import SqliteBackend
from ._store import SessionStore

__all__ = [
    "ENTRY_KINDS",
    "FORMAT_VERSION",
    "NOT_STARTED_TEXT",
    "OUTCOME_UNKNOWN_TEXT",
    "PROCESS_STOPPED_TEXT",
    "SCHEMA_VERSION",
    "Holder",
    "Lease",
    "SessionBackend",
    "SessionEntry",
    "SessionInfo",
    "SessionLookup",
    "SessionRecorder",
    "SessionStore",
    "SqliteBackend",
    "open_session_store",
    "repair_transcript",
    "serve_sessions",
]
