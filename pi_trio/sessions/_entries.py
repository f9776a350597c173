"""The session log's entries: their kinds, their JSON, and how they are read back.

One entry per thing that happened to a session, each with a ``seq`` that is monotonic per
session, the ``epoch`` of the holder that wrote it, a ``time`` (Unix milliseconds) and a
``version`` of this format. ``data`` is JSON; where it holds a message, a tool call's arguments or
a tool result, that part is pi's JSON (:func:`pt.to_json`), so a transcript read back is exactly
what pi would read. The same rows go into every backend (SQLite and PostgreSQL).

Kinds and their ``data``:

- ``state``: ``{"model": <model>, "systemPrompt": str, "thinkingLevel": str}``: the agent's
  settings, logged when a session is created and at every run start where they changed. The
  model's ``headers`` are never stored (they may hold credentials).
- ``message``: a message of the transcript, pi's JSON, logged at its ``message_end``.
- ``queued``: ``{"queue": "steer" | "followUp", "message": <message>}``: ``steer()`` /
  ``follow_up()``.
- ``drained``: ``{"queue": ..., "ref": <seq of the queued entry>}``: a run took that message
  (it is logged in the same commit, just before the ``message`` entry of the same message).
- ``cleared``: ``{"queue": ...}``: every message queued there before it is gone.
- ``run_start``: ``{}``; ``run_end``: ``{"reason": <stop reason>, "repaired": bool}``.
- ``tool_intent``: ``{"toolCallId", "toolName", "arguments"}``: the call is about to execute.
- ``tool_result``: ``{"toolCallId", "toolName", "content", "details", "isError"}``: what the
  call produced, logged as soon as that tool finished.
- ``transcript``: ``{"messages": [...]}``: the application replaced the transcript (``reset()``,
  ``agent.state.messages = ...``); later entries build on it.
- ``compaction``: ``{"summary": str, "tokensBefore": int, "firstKept": int, "keptCount": int,
  "timestamp": int}`` (and ``"systemKept": [int]`` when it kept system messages from before
  the cut): the transcript was compacted: it became a ``CompactionSummary`` (these fields),
  then the system messages at those indexes, then the ``keptCount`` messages from index
  ``firstKept`` of the transcript the entries before it describe. The entries before it stay;
  it is durable before its ``compaction_end`` is delivered.
- ``approval``: ``{"toolCallId", "toolName", "arguments"}``: the call waits for a person's
  decision (its tool has ``requires_approval``); durable before its ``tool_approval_request``
  is delivered. Until a result is logged for it, the call waits, across restarts.
- ``decision``: ``{"toolCallId", "approved": bool, "reason": str}`` (and ``"inbox"``: the
  ``store.approve()`` row it was moved from): a person's decision about a waiting call.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

import attrs

from .._errors import SessionLogError, WireFormatError
from .._logging import sessions_logger
from ..events import ToolExecutionEnd, ToolResult
from ..messages import AgentMessage, ImageContent, TextContent, ToolCall, ToolResultMessage
from ..models import Model
from ..wire import carries_message, from_json, to_json
from ._backend import Row

if TYPE_CHECKING:
    from ..agent import AgentState

__all__ = [
    "ENTRY_KINDS",
    "FORMAT_VERSION",
    "EntryKind",
    "Note",
    "QueueName",
    "SessionEntry",
    "check_loggable",
    "dumps",
    "encode",
    "encode_or_stand_in",
    "encode_string",
    "entry_error",
    "inbox_row",
    "model_json",
    "read_message",
    "settings_json",
    "tool_result_data",
]

FORMAT_VERSION: Final = 1
"""The version of the entry format this pi_trio writes and reads (newer ones are refused). It
counts changes in the meaning of existing kinds; a new kind does not bump it (a reader refuses
a kind it does not know by name, see :func:`check_row`)."""

EntryKind: TypeAlias = Literal[
    "state",
    "message",
    "queued",
    "drained",
    "cleared",
    "run_start",
    "run_end",
    "tool_intent",
    "tool_result",
    "transcript",
    "compaction",
    "approval",
    "decision",
    "inbox_ignored",
]
ENTRY_KINDS: Final[frozenset[str]] = frozenset(get_args(EntryKind))
QueueName: TypeAlias = Literal["steer", "followUp"]


@attrs.frozen
class SessionEntry:
    """One entry of a session log, as :meth:`SessionStore.load` returns it.

    ``data`` is the entry's parsed JSON; ``time`` is Unix milliseconds; ``epoch`` is the holder
    epoch it was written under (two holders never interleave: the log proves it).
    """

    session_id: str
    seq: int
    kind: str
    data: Any
    time: int
    epoch: int
    version: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        """The entry as one JSON object (what ``pi-trio sessions export`` writes per line)."""
        return {
            "sessionId": self.session_id,
            "seq": self.seq,
            "kind": self.kind,
            "time": self.time,
            "epoch": self.epoch,
            "version": self.version,
            "data": self.data,
        }


@attrs.define
class Note:
    """An entry to encode into its row (:func:`encode`): a recorder encodes each entry when it
    notes it, and keeps the row until its commit."""

    seq: int
    kind: EntryKind
    payload: Any
    time: int


def _default(value: Any) -> Any:
    """JSON for what a tool put in ``details`` beyond plain JSON (an attrs record, a set...)."""
    if attrs.has(type(value)):
        return to_json(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


_ENCODER: Final = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, default=_default, allow_nan=False
)
# The C encoder that JSONEncoder.encode builds on every call, built once for this per-entry
# path: the same settings, without the circular-reference check, whose markers would be state
# shared between calls (a self-containing value recurses until RecursionError instead, which
# the recorder reports the way it reports any unencodable one).
_C_ENCODER: Final = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, _default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if getattr(json.encoder, "c_make_encoder", None) is not None
    else None
)


encode_string: Final[Callable[[str], str]] = json.encoder.encode_basestring
"""``dumps(text)`` for a ``str`` (its JSON string, non-ASCII kept as is)."""


def _encode_plain(payload: Any) -> str:
    if _C_ENCODER is None:
        return _ENCODER.encode(payload)
    if isinstance(payload, str):
        return encode_string(payload)  # what encode() does for a bare str
    return "".join(_C_ENCODER(payload, 0))


def dumps(payload: Any) -> str:
    """The JSON text stored for a payload of plain JSON values (pi's JSON already applied).

    NaN and the infinities become ``null``, as ``JSON.stringify`` writes them (JSON has no
    such numbers, and the reader refuses them). A lone surrogate (``json.loads`` takes one
    from a provider's ``"\\ud83d"``) becomes U+FFFD, as a UTF-8 decoder shows a broken
    character: neither SQLite nor PostgreSQL can store one, and the commit that carries it
    would fail every session's entries in it."""
    try:
        text = _encode_plain(payload)
    except ValueError:  # a non-finite float somewhere: the slow path, rarely taken
        text = _encode_plain(_finite(payload))
    if text.isascii() or _SURROGATE.search(text) is None:  # isascii: a flag, no scan
        return text
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


# --- encoding noted entries ----------------------------------------------------------------


def tool_result_data(
    call_id: str, name: str, written: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    """A ``tool_result`` entry's data: ``written`` is the JSON of what holds the content and
    details (the call's ``ToolResult``, or the ``ToolResultMessage`` made of it)."""
    return {
        "toolCallId": call_id,
        "toolName": name,
        "content": written["content"],
        "details": written.get("details"),  # omitted there while None
        "isError": is_error,
    }


def inbox_row(kind: EntryKind, payload: Any) -> int | None:
    """The inbox row (``store.enqueue()``/``approve()``) that an entry moves into the log: a
    ``queued`` entry's third item, a ``decision``'s ``inbox`` (the keeper's ignored ones too),
    an ``inbox_ignored``'s. The commit that logs the entry deletes the row."""
    if kind == "queued":
        inbox: int | None = payload[2]
        return inbox
    if kind == "decision" or kind == "inbox_ignored":
        return payload.get("inbox")  # type: ignore[no-any-return]
    return None


def encode(note: Note) -> Row:
    """A noted entry's row: ``(seq, kind, data text, time, version)``."""
    kind, payload = note.kind, note.payload
    data: Any
    if kind == "message":
        data = to_json(payload)
    elif kind == "tool_result":
        event: ToolExecutionEnd = payload
        result = event.result
        if not (result.structured_content is None and result.usage is None and not result.extra):
            result = ToolResult(result.content, result.details)  # what the entry stores, only
        written = to_json(result)
        data = tool_result_data(event.tool_call_id, event.tool_name, written, event.is_error)
    elif kind == "tool_intent":
        call: ToolCall = payload
        data = {"toolCallId": call.id, "toolName": call.name, "arguments": call.arguments}
    elif kind == "queued":
        queue, message, inbox = payload
        data = {"queue": queue, "message": to_json(message)}
        if inbox is not None:
            data["inbox"] = inbox  # the store.enqueue() row it was moved from
    elif kind == "transcript":
        data = {"messages": [to_json(message) for message in payload]}
    else:
        data = payload
    return (note.seq, kind, dumps(data), note.time, FORMAT_VERSION)


def encode_or_stand_in(session_id: str, note: Note) -> Row:
    """``encode(note)``; a tool result or message pi's JSON cannot hold (details nested too
    deep, say) is logged with ``details`` saying why, instead of blocking every later commit."""
    try:
        return encode(note)
    except Exception as exc:  # WireFormatError, RecursionError, a __str__ that raises...
        why = f"not storable in the session log: {type(exc).__name__}: {exc}"
        sessions_logger.error("session %r, entry %d (%s): %s", session_id, note.seq, note.kind, why)
        payload = note.payload
        if isinstance(payload, ToolExecutionEnd):
            result = ToolResult(payload.result.content, details={"unstorable": why})
            payload = attrs.evolve(payload, result=result)
        elif isinstance(payload, ToolResultMessage):
            payload = attrs.evolve(payload, details={"unstorable": why})
        else:
            raise
        try:
            return encode(attrs.evolve(note, payload=payload))
        except Exception:  # the content too: only the text says what happened
            text: list[TextContent | ImageContent] = [TextContent(f"(a result that was {why})")]
            if isinstance(payload, ToolExecutionEnd):
                payload = attrs.evolve(payload, result=ToolResult(text, {"unstorable": why}))
            else:
                payload = attrs.evolve(payload, content=text)
            return encode(attrs.evolve(note, payload=payload))


def entry_error(session_id: str, seq: int | None, problem: str) -> SessionLogError:
    where = f"session {session_id!r}" + (f", entry seq {seq}" if seq is not None else "")
    return SessionLogError(
        f"{where}: {problem}; nothing was changed (export the log with `pi-trio sessions "
        f"export {session_id}` to inspect it)",
        session_id=session_id,
        seq=seq,
        problem=problem,
    )


def check_row(session_id: str, seq: int, kind: str, version: int) -> None:
    """Refuse an entry this pi_trio cannot interpret (before its JSON is read)."""
    if version > FORMAT_VERSION:
        raise entry_error(
            session_id,
            seq,
            f"entry format version {version} is newer than this pi_trio reads "
            f"({FORMAT_VERSION}); upgrade pi_trio",
        )
    if kind not in ENTRY_KINDS:
        raise entry_error(session_id, seq, f"unknown entry kind {kind!r}")


def parse_data(session_id: str, seq: int, text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise entry_error(session_id, seq, f"bad JSON in entry data ({exc})") from None


def parse_all(session_id: str, rows: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The data of every row (``(seq, kind, text, ...)``), parsed in one ``json.loads`` call
    (one C call instead of one per entry); a failure is then located entry by entry."""
    try:
        parsed = json.loads("[" + ",".join([row[2] for row in rows]) + "]")
        if len(parsed) == len(rows):
            return parsed  # type: ignore[no-any-return]
    except (ValueError, TypeError, RecursionError):
        pass
    return [parse_data(session_id, row[0], row[2]) for row in rows]


def read_message(session_id: str, seq: int, data: Any) -> AgentMessage:
    """A message from an entry's JSON; :class:`pt.SessionLogError` when it is not pi's."""
    try:
        return from_json(data, AgentMessage)
    except WireFormatError as exc:
        raise entry_error(session_id, seq, f"not a pi message ({exc})") from None


def read_messages(session_id: str, seq: int, items: Iterable[Any]) -> list[AgentMessage]:
    return [read_message(session_id, seq, item) for item in items]


def model_json(model: Model) -> Any:
    data = to_json(model)
    if isinstance(data, dict):
        data.pop("headers", None)  # may hold credentials: never stored
    return data


def settings_json(state: AgentState) -> dict[str, Any]:
    return {
        "model": model_json(state.model),
        "systemPrompt": state.system_prompt,
        "thinkingLevel": state.thinking_level,
    }


def check_loggable(message: AgentMessage) -> None:
    """Refuse a message the log could not give back: an application's own message type that
    ``pi_trio.wire.register_message_type`` does not know (resuming would fail on its entry).

    Raises:
        TypeError: saying which type and how to register it.
    """
    if not carries_message(message):
        name = type(message).__qualname__
        raise TypeError(
            f"a durable session cannot log a {name}: register its type first, "
            f"pi_trio.wire.register_message_type({name}), so the log can give it back"
        )
