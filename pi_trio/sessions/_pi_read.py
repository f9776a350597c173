"""Reading pi-coding-agent's session files (JSONL, version 3) into the context pi derives.

A pi session file is a header line (``{"type": "session", "version": 3, "id", "timestamp",
"cwd", ...}``) and then one entry per line, each with an ``id`` and a ``parentId``: a tree, whose
current leaf is the file's last entry (what pi's ``SessionManager`` takes when it opens the
file). The context is what pi 1.6's ``buildSessionContext`` derives from the leaf's branch:
every message on it; after a ``compaction``, its summary (and the system message it saved) then
the entries from its ``firstKeptEntryId`` on; a ``branch_summary`` and a ``custom_message`` as
messages of their own; a ``context_edit`` replacing (or dropping) the content of the entry it
targets. Model and thinking level come from the branch's last ``model_change`` (or assistant
message) and ``thinking_level_change``. Other entries (labels, ``custom`` data, session names,
usage) say nothing to the model and are not read.

Where pi skips what it cannot parse, this reader refuses the file instead, naming the line,
so that an import never silently differs from what pi would show.
"""

from __future__ import annotations

import datetime
import json
import os
import stat
from collections.abc import Sequence
from typing import Any, Final

import attrs

from .._errors import PiSessionFileError, WireFormatError
from ..messages import AgentMessage
from ..wire import from_json

__all__ = ["PI_SESSION_VERSION", "PiSessionFile", "read_pi_session", "refusal"]

PI_SESSION_VERSION: Final = 3
"""The session file version pi 1.6 writes, and the one read and written here."""

THINKING_LEVELS: Final = frozenset({"off", "minimal", "low", "medium", "high", "xhigh"})

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

Entry = dict[str, Any]


@attrs.frozen
class PiSessionFile:
    """What a pi session file says to the model: its header, the context's messages, and
    the branch's model (``(provider, model id, api or None)``) and thinking level."""

    header: dict[str, Any]
    messages: list[AgentMessage]
    model: tuple[str, str, str | None] | None
    thinking_level: str


class _Refusal(Exception):
    """A problem at a line, turned into a :class:`PiSessionFileError` naming the file."""

    def __init__(self, line: int | None, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


MAX_FILE_BYTES = 1 << 30
"""The largest session file read (1 GiB): the whole file is read into memory."""


def refusal(path: str, line: int | None, problem: str) -> PiSessionFileError:
    where = f"{path}, line {line}" if line is not None else path
    return PiSessionFileError(f"{where}: {problem}; nothing was imported", path=path, line=line)


def read_pi_session(path: str) -> PiSessionFile:
    """Read the pi session file at ``path`` (blocking: call it in a worker thread).

    Raises:
        pt.PiSessionFileError: the file is not a pi session of version 3, a line is not JSON
            or not an entry, an entry's parent is missing, or a message of the context is not
            one pi_trio reads; the error names the file and the line.
        OSError: the file cannot be read.
    """
    # O_NONBLOCK: opening a FIFO must not wait for a writer (a regular file ignores it);
    # the descriptor is checked before open() wraps it (which refuses a directory)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
    except BaseException:
        os.close(descriptor)
        raise
    if not regular:  # a directory, a FIFO that would block, /dev/zero that never ends
        os.close(descriptor)
        raise refusal(path, None, "not a regular file")
    with open(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if info.st_size > MAX_FILE_BYTES:
            raise refusal(
                path, None, f"{info.st_size} bytes, more than the {MAX_FILE_BYTES} read at most"
            )
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # grew while being read
        raise refusal(path, None, f"more than the {MAX_FILE_BYTES} bytes read at most")
    try:
        header, entries = _parse(data)
        line_of = {entry["id"]: line for line, entry in entries}
        branch = _branch([entry for _, entry in entries], line_of)
        model, thinking_level = _settings(branch, line_of)
        messages = [
            _message(item, line_of[source["id"]]) for source, item in _context(branch, line_of)
        ]
    except _Refusal as refused:
        raise refusal(path, refused.line, refused.problem) from None
    return PiSessionFile(header, messages, model, thinking_level)


def _parse(data: bytes) -> tuple[dict[str, Any], list[tuple[int, Entry]]]:
    header: dict[str, Any] | None = None
    entries: list[tuple[int, Entry]] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise _Refusal(number, "not UTF-8 text") from None
        except RecursionError:
            raise _Refusal(number, "JSON nested too deeply to read") from None
        except ValueError as exc:
            problem = f"not JSON ({exc}); a pi session holds one JSON object a line"
            if header is None:
                problem = f"not a pi session file: its first line is not JSON ({exc})"
            raise _Refusal(number, problem) from None
        if header is None:
            header = _header(item, number)
            continue
        if isinstance(item, dict) and item.get("type") == "session":
            continue  # a later header (two files joined, say) is no entry: pi skips it too
        _check_entry(item, number, seen)
        entries.append((number, item))
    if header is None:
        raise _Refusal(None, "empty: not a pi session file (it has no session header)")
    return header, entries


def _header(item: Any, number: int) -> dict[str, Any]:
    if not (
        isinstance(item, dict) and item.get("type") == "session" and isinstance(item.get("id"), str)
    ):
        raise _Refusal(
            number,
            'not a pi session file: its first line is not a session header ({"type": "session", '
            '"id": ..., "version": 3, ...})',
        )
    version = item.get("version", 1)
    if version != PI_SESSION_VERSION:
        todo = (
            "open it once with pi 1.6 (`pi --session FILE`), which rewrites an older file as "
            "version 3, then import it again"
            if isinstance(version, int) and version < PI_SESSION_VERSION
            else "this pi_trio reads version 3 (pi 1.6)"
        )
        raise _Refusal(number, f"a pi session file of version {version!r}: {todo}")
    return item


def _check_entry(item: Any, number: int, seen: set[str]) -> None:
    if not (
        isinstance(item, dict)
        and isinstance(item.get("type"), str)
        and isinstance(item.get("id"), str)
        and (item.get("parentId") is None or isinstance(item.get("parentId"), str))
    ):
        raise _Refusal(number, "not a session entry (an object with a type, an id and a parentId)")
    if item["id"] in seen:
        raise _Refusal(number, f"a second entry with the id {item['id']!r}")
    seen.add(item["id"])


def _branch(entries: Sequence[Entry], line_of: dict[str, int]) -> list[Entry]:
    """The current leaf's branch, root first (the leaf is the file's last entry, as pi's
    ``SessionManager`` takes it)."""
    if not entries:
        return []
    by_id = {entry["id"]: entry for entry in entries}
    branch: list[Entry] = []
    current: Entry | None = entries[-1]
    on_branch: set[str] = set()
    while current is not None:
        if current["id"] in on_branch:
            raise _Refusal(line_of[current["id"]], "its entry is its own ancestor (a cycle)")
        on_branch.add(current["id"])
        branch.append(current)
        parent = current.get("parentId")
        if not parent:
            break
        current = by_id.get(parent)
        if current is None:
            raise _Refusal(
                line_of[branch[-1]["id"]],
                f"the entry's parent {parent!r} is not in the file (a truncated or edited file?)",
            )
    branch.reverse()
    return branch


def _settings(
    branch: Sequence[Entry], line_of: dict[str, int]
) -> tuple[tuple[str, str, str | None] | None, str]:
    thinking_level = "off"
    model: tuple[str, str, str | None] | None = None
    for entry in branch:
        kind = entry["type"]
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel")  # type: ignore[assignment]
            if thinking_level == "max":  # pi 1.6's level above xhigh: clamped, as pi clamps
                thinking_level = "xhigh"
            if not isinstance(thinking_level, str) or thinking_level not in THINKING_LEVELS:
                raise _Refusal(line_of[entry["id"]], f"unknown thinking level {thinking_level!r}")
        elif kind == "model_change":
            model = (_text(entry, "provider", line_of), _text(entry, "modelId", line_of), None)
        elif kind == "message" and _role(entry) == "assistant":
            message = entry["message"]
            provider, model_id, api = (message.get(k) for k in ("provider", "model", "api"))
            if isinstance(provider, str) and isinstance(model_id, str):
                model = (provider, model_id, api if isinstance(api, str) else None)
    return model, thinking_level


def _text(entry: Entry, key: str, line_of: dict[str, int]) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise _Refusal(line_of[entry["id"]], f"{entry['type']} entry without a string {key!r}")
    return value


def _target(edit: Entry, line_of: dict[str, int]) -> Any:
    target = edit.get("targetId")
    if target is not None and not isinstance(target, str):
        raise _Refusal(
            line_of[edit["id"]], f"context_edit whose targetId is {type(target).__name__}"
        )
    return target


def _role(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def _context(branch: Sequence[Entry], line_of: dict[str, int]) -> list[tuple[Entry, Any]]:
    """Each message of the context (pi's JSON) with the entry it comes from."""
    compaction = next((e for e in reversed(branch) if e["type"] == "compaction"), None)
    entries = list(branch)
    if compaction is not None:
        at = branch.index(compaction)
        first_kept = compaction.get("firstKeptEntryId")
        kept_ids = [e["id"] for e in branch[:at]]
        kept = branch[kept_ids.index(first_kept) : at] if first_kept in kept_ids else []
        entries = [
            compaction,
            *(e for e in kept if not (e["type"] == "message" and _role(e) == "system")),
            *branch[at + 1 :],
        ]
    edits = {_target(e, line_of): e for e in entries if e["type"] == "context_edit"}
    context: list[tuple[Entry, Any]] = []
    for index, entry in enumerate(entries):
        if entry["type"] == "compaction" and index > 0:
            continue  # only the latest compaction speaks (an older one kept by its id does not)
        for message in _edited(_messages_of(entry, line_of), edits.get(entry["id"])):
            context.append((entry, message))
    return context


def _messages_of(entry: Entry, line_of: dict[str, int]) -> list[Any]:
    kind = entry["type"]
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("content") is None:
            role = message.get("role")
            if role == "system":
                return [{**message, "content": ""}]
            if role in ("user", "assistant", "toolResult"):
                return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        content = entry.get("content")
        message = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": [] if content is None else content,
            "display": entry.get("display"),
            "timestamp": _ms(entry, line_of),
        }
        if entry.get("details") is not None:
            message["details"] = entry["details"]
        return [message]
    if kind == "branch_summary" and entry.get("summary"):
        return [
            {
                "role": "branchSummary",
                "summary": entry["summary"],
                "fromId": entry.get("fromId"),
                "timestamp": _ms(entry, line_of),
            }
        ]
    if kind == "compaction":
        summary = {
            "role": "compactionSummary",
            "summary": entry.get("summary"),
            "tokensBefore": entry.get("tokensBefore"),
            "timestamp": _ms(entry, line_of),
        }
        system = entry.get("systemMessage")
        return [system, summary] if system else [summary]
    return []


def _edited(messages: list[Any], edit: Entry | None) -> list[Any]:
    if edit is None:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    edited = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant", "toolResult", "custom"):
            edited.append(message)
            continue
        content = replacement.get("content") if isinstance(replacement, dict) else None
        if role in ("assistant", "toolResult") and isinstance(content, str):
            content = [{"type": "text", "text": content}]
        edited.append({**message, "content": content})
    return edited


def _ms(entry: Entry, line_of: dict[str, int]) -> int:
    """An entry's ISO timestamp in Unix milliseconds (what ``new Date(t).getTime()`` gives)."""
    text = entry.get("timestamp")
    try:
        moment = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        raise _Refusal(
            line_of[entry["id"]], f"a timestamp that is not ISO 8601: {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return (moment - _EPOCH) // datetime.timedelta(milliseconds=1)


def _message(data: Any, line: int) -> AgentMessage:
    try:
        message: AgentMessage = from_json(data, AgentMessage)
    except WireFormatError as exc:
        raise _Refusal(line, f"a message pi_trio cannot read: {exc}") from None
    return message
