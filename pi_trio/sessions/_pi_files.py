"""pi session files in and out of a session store: ``store.import_pi_session`` and
``store.export_pi_session`` (see docs/sessions.md, "pi session files").

Import reads the file in a worker thread (:mod:`._pi_read`), then creates the session and
writes its whole log in one transaction: a ``state`` entry (the branch's model and thinking
level) and one ``message`` entry per message of the context pi derives. Export writes the
session's transcript as a linear chain of pi entries to a temporary file beside the target,
then moves it into place.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import secrets
import stat
import tempfile
import uuid
from collections.abc import Sequence
from typing import Any, Final

import trio

from .._callbacks import exception_line
from .._errors import ProviderNotFoundError, SessionExistsError, SessionNotFoundError
from .._logging import sessions_logger
from ..agent import DEFAULT_MODEL
from ..coding_messages import BranchSummary, CompactionSummary, ExtensionMessage
from ..messages import AgentMessage, now_ms
from ..models import Model, get_model
from ..wire import to_json
from ._backend import (
    Lease,
    Row,
    SessionBackend,
    as_leased,
    check_new_session_id,
    check_session_id,
)
from ._entries import Note, dumps, encode, entry_error, model_json
from ._holders import new_holder
from ._pi_read import PI_SESSION_VERSION, PiSessionFile, read_pi_session, refusal
from ._repair import restore

__all__ = ["export_pi_session", "import_pi_session", "pi_session_text"]

# pi's own rule for a session id (assertValidSessionId)
_PI_ID: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_LAST_ISO_MS: Final = 253402300799999  # 9999-12-31T23:59:59.999Z


async def import_pi_session(
    backend: SessionBackend, path: str | os.PathLike[str], session_id: str | None
) -> str:
    """See :meth:`pt.SessionStore.import_pi_session`."""
    where = os.fspath(path)
    if session_id is not None:
        check_new_session_id(session_id)
    # read and encoded in a worker thread: a big file's encoding would stall the event loop
    found, rows = await trio.to_thread.run_sync(_read_rows, where)
    if session_id is None:
        session_id = _header_id(found, where)
    lease = await backend.acquire(session_id, new_holder(secrets.token_hex(4)))
    if isinstance(lease, str):
        raise _exists(backend, session_id, where, f" (and open, held by {lease})")
    done = False
    new = lease.created
    try:
        leased = as_leased(backend)
        if new and leased is not None and await leased.inbox(session_id):
            new = False  # a PostgreSQL session with no log yet, but input queued for it
        if not new:
            raise _exists(backend, session_id, where, "")
        await backend.append(lease, rows)
        done = True
    finally:
        with trio.CancelScope(shield=True):
            await _give_back(backend, lease, delete=new and not done, failed=not done)
    return session_id


async def _give_back(backend: SessionBackend, lease: Lease, *, delete: bool, failed: bool) -> None:
    """Release the import's lease (idle: nothing is queued, no worker claims it) and delete
    the session it created when the import failed (nothing half-imported, not even an empty
    session). When the import failed and this fails too, the import's error stays the one
    raised, and this is one warning."""
    try:
        await backend.release(lease, idle=True)
        if delete:
            await backend.delete(lease.session_id)
    except Exception as exc:
        if not failed:
            raise
        sessions_logger.warning(
            "session %r: after a failed import, could not %s (%s)",
            lease.session_id,
            "delete the empty session it created" if delete else "give it back",
            exception_line(exc),
        )


def _header_id(found: PiSessionFile, where: str) -> str:
    """The file's own session id, as the new session's, when a store keeps it."""
    session_id: str = found.header["id"]
    try:
        check_new_session_id(session_id)
    except ValueError as exc:
        raise refusal(
            where,
            1,
            f"its session id cannot be a store's ({exc}): import it under "
            "another id (session_id=..., or --id)",
        ) from None
    return session_id


def _exists(backend: SessionBackend, session_id: str, path: str, held: str) -> SessionExistsError:
    return SessionExistsError(
        f"session {session_id!r} already exists in {backend.description}{held}; import {path} "
        "under another id (session_id=..., or --id) or delete that session first; nothing "
        "was imported",
        session_id=session_id,
    )


def _read_rows(path: str) -> tuple[PiSessionFile, list[Row]]:
    found = read_pi_session(path)
    return found, _rows(found)


def _rows(found: PiSessionFile) -> list[Row]:
    now = now_ms()
    notes: list[Note] = []
    if found.model is not None:
        provider, model_id, api = found.model
        settings = {
            "model": model_json(_model(provider, model_id, api)),
            "systemPrompt": "",
            "thinkingLevel": found.thinking_level,
        }
        notes.append(Note(1, "state", settings, now))
    for message in found.messages:
        notes.append(Note(len(notes) + 1, "message", message, now))
    return [encode(note) for note in notes]


def _model(provider: str, model_id: str, api: str | None) -> Model:
    """pi's file names a model by provider and id: the built-in one, else a descriptor of it
    (an application that opens the session with its own model of that id uses its own)."""
    try:
        return get_model(provider, model_id)
    except ProviderNotFoundError:
        return Model(
            id=model_id,
            name=model_id,
            api=api or DEFAULT_MODEL.api,
            provider=provider,
            base_url="",
        )


async def export_pi_session(
    backend: SessionBackend,
    session_id: str,
    path: str | os.PathLike[str],
    *,
    overwrite: bool,
    cwd: str | None,
) -> None:
    """See :meth:`pt.SessionStore.export_pi_session`."""
    check_session_id(session_id)
    rows = await backend.load_rows(session_id)
    if not rows:
        raise SessionNotFoundError(
            f"no session {session_id!r} in {backend.description}", session_id=session_id
        )
    image = restore(session_id, rows)
    settings: Any = image.settings  # a hand-edited log may hold anything there
    if settings is not None and not (
        isinstance(settings, dict) and isinstance(settings.get("model"), dict)
    ):
        raise entry_error(session_id, None, "unreadable state entry (no model object)")
    text = pi_session_text(
        image.messages,
        settings,
        session_id=session_id,
        cwd=os.getcwd() if cwd is None else cwd,
    )
    await trio.to_thread.run_sync(_write_atomically, os.fspath(path), text, overwrite)


def pi_session_text(
    messages: Sequence[AgentMessage],
    settings: dict[str, Any] | None,
    *,
    session_id: str,
    cwd: str,
) -> str:
    """A pi 1.6 session file (version 3) whose context, as pi derives it, is ``messages``:
    a header, one entry per message, then the model and thinking level, each entry the child
    of the one before (the last is the leaf pi continues from)."""
    now = now_ms()
    header = {
        "type": "session",
        "version": PI_SESSION_VERSION,
        "id": session_id if _PI_ID.match(session_id) else str(uuid.uuid4()),
        "timestamp": _iso(now),
        "cwd": cwd,
    }
    lines = [dumps(header)]
    chain = _Chain(lines)
    for index, message in enumerate(messages):
        _add_message(chain, index, message)
    if settings is not None:  # last: they win over the model of any assistant message before
        model = settings.get("model") or {}
        chain.add(now, "model_change", provider=model.get("provider"), modelId=model.get("id"))
        chain.add(now, "thinking_level_change", thinkingLevel=settings.get("thinkingLevel"))
    return "\n".join(lines) + "\n"


class _Chain:
    """Entries appended as a linear id/parentId chain (ids: 8 hex digits, as pi makes them)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.ids: set[str] = set()
        self.last: str | None = None

    def new_id(self) -> str:
        while (entry_id := secrets.token_hex(4)) in self.ids:
            pass
        self.ids.add(entry_id)
        return entry_id

    def add(self, when: int, kind: str, entry_id: str | None = None, **fields: Any) -> None:
        entry_id = entry_id or self.new_id()
        entry = {"type": kind, "id": entry_id, "parentId": self.last, "timestamp": _iso(when)}
        entry.update(fields)
        self.lines.append(dumps(entry))
        self.last = entry_id


def _add_message(chain: _Chain, index: int, message: AgentMessage) -> None:
    """The message as pi keeps it: a summary or an extension's message as the entry pi makes
    for it (where its context gives the message back unchanged), anything else as a
    ``message`` entry."""
    data = to_json(message)
    when = data.get("timestamp") if isinstance(data, dict) else None
    # pi reads a summary's or extension message's time back from the entry's ISO time
    exact = isinstance(when, int) and 0 <= when <= _LAST_ISO_MS
    if not isinstance(when, int) or not exact:
        when = now_ms()
    if isinstance(message, CompactionSummary) and index == 0 and exact:
        # first kept: itself, so the context is the summary and everything after it
        entry_id = chain.new_id()
        chain.add(
            when,
            "compaction",
            entry_id,
            summary=message.summary,
            firstKeptEntryId=entry_id,
            tokensBefore=message.tokens_before,
        )
    elif isinstance(message, BranchSummary) and message.summary and exact:
        chain.add(when, "branch_summary", fromId=message.from_id, summary=message.summary)
    elif isinstance(message, ExtensionMessage) and exact:
        fields = {"customType": data["customType"], "content": data["content"]}
        fields["display"] = data["display"]
        if "details" in data:
            fields["details"] = data["details"]
        chain.add(when, "custom_message", **fields)
    else:
        chain.add(when, "message", message=data)


def _iso(ms: int) -> str:
    """``new Date(ms).toISOString()``."""
    moment = datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def _write_atomically(path: str, text: str, overwrite: bool) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it: a reader sees the old
    file or the whole new one, never part of it; without ``overwrite`` an existing file is
    never replaced (even one made meanwhile)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # os.replace would put a file there
        raise FileExistsError(
            f"{path} is not a regular file (a folder, a link or a device): choose a file's "
            "path; nothing was written"
        )
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory
        )
    except OSError as exc:
        raise type(exc)(
            exc.errno, f"cannot write beside {path} ({exc.strerror}); nothing was written"
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if overwrite:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)  # fails when path exists: nothing is replaced
            except FileExistsError:
                raise FileExistsError(
                    f"{path} exists; pass overwrite=True (--overwrite) to replace it, or "
                    "choose another path; nothing was written"
                ) from None
            os.unlink(temporary)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
