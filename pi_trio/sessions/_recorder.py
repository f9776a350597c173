"""``SessionRecorder``: the :class:`pt.Recorder` that writes an agent's session log.

It notes entries synchronously as the agent's state changes (``record``, ``queued``,
``cleared``, and the tool-call intents of :func:`durable_before_tool_call`) and commits
everything noted since the last commit in one transaction at each :meth:`flush` (group commit).
``record`` asks for a flush exactly where the durability rules need one:

- ``message_end``: the message is durable before anyone sees its end; a tool-result message
  is durable already when it is exactly what its logged ``tool_result`` entry rebuilds on
  resume (same result, same time), so it rides on the next commit (two commits per tool
  turn, not three);
- ``tool_execution_end``: each tool's result as soon as that tool finished;
- ``agent_end``: the run's end;
- ``tool_approval_request``: the call waits for a decision (a person may decide from another
  process: the log must say so first);
- a tool call's intent before ``execute`` (the wrapped ``before_tool_call`` awaits it).

Overlapping flushes of one recorder (the loop's, the lease keeper's, a queue's) share commits:
a flush that comes while a commit is in flight waits for it, then commits whatever is still
pending. Parallel tools' results are not among them: their ends are delivered one after
another, each durable first, so each is a commit of its own (which the store's grouped commit
shares with other agents' appends).

Pending entries are kept as their encoded rows, not as objects around them: every agent parked
at a durable point holds its pending entries until the commit, and with a thousand agents each
object held there is a thousand more for Python's cyclic garbage collector to walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio

from .._errors import SessionBusyError
from .._logging import sessions_logger
from ..coding_messages import CompactionSummary
from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolApprovalRequest,
    ToolExecutionEnd,
)
from ..messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage, now_ms
from ..tools import ToolDecision
from ..wire import carries_message, to_json
from ._backend import Lease, Row, SessionBackend
from ._entries import (
    FORMAT_VERSION,
    EntryKind,
    Note,
    QueueName,
    check_loggable,
    dumps,
    encode_or_stand_in,
    inbox_row,
    settings_json,
    tool_result_data,
)

if TYPE_CHECKING:
    from ..agent import Agent, AgentState

__all__ = ["SessionRecorder"]


_now = now_ms  # an entry's time: the clock of message timestamps (see _rebuildable)


def _queue_name(kind: str) -> QueueName:
    return "steer" if kind == "steer" else "followUp"


def _tool_named(tools: Sequence[Any], name: str) -> Any:
    """The tool the loop runs for ``name`` (the last of that name, as a dict by name keeps)."""
    for tool in reversed(tools):
        if tool.name == name:
            return tool
    return None


def _entry_fields_only(message: ToolResultMessage) -> bool:
    """Whether ``message`` holds nothing beyond what a ``tool_result`` entry keeps."""
    return (
        message.usage is None
        and message.nested_calls is None
        and message.duration_ms is None
        and message.extra is None
    )


class SessionRecorder:
    """Writes one agent's session log under one lease (see the module docstring).

    ``known`` is the transcript as the log already describes it (a resumed session's), so that
    a run starting from another transcript (``reset()``, an assignment) logs it anew.
    """

    def __init__(
        self,
        backend: SessionBackend,
        lease: Lease,
        *,
        next_seq: int,
        known: Sequence[AgentMessage] = (),
        settings: dict[str, Any] | None = None,
    ) -> None:
        self._backend = backend
        self._lease = lease
        self._next_seq = next_seq
        self._durable_seq = next_seq - 1
        # the rows noted since the last commit (each encoded when noted; see the module
        # docstring), and the inbox rows that commit deletes (see from_inbox)
        self._pending: list[Row] = []
        self._pending_inbox: list[int] = []
        self._writing = False  # a commit of this recorder's is in flight
        self._written: trio.Event | None = None  # made by a flush that waits for that commit
        self._failure: BaseException | None = None
        self._closed = False
        # message identity -> queued entries (seq, queue) in FIFO order, to log their drain
        self._queued: dict[int, list[tuple[int, QueueName, AgentMessage]]] = {}
        self._count = len(known)
        self._last: AgentMessage | None = known[-1] if known else None
        self._settings = settings
        self._settings_of: tuple[Any, ...] | None = None
        self.agent: Agent | None = None
        self.early_intents = False
        """Log intents with their assistant message (set when no ``before_tool_call`` hook of
        the application's runs; see :meth:`_note_early_intents`)."""
        self._early: set[str] = set()
        # tool_result rows by call id, until their result message ends (see _rebuildable)
        self._results: dict[str, Row] = {}
        self.from_inbox: int | None = None
        """Set while an inbox row is queued or decided (see ``pull_inbox``): its ``queued``
        or ``decision`` entry names the row, and the commit that logs it deletes the row."""
        self.inbox_seen: set[int] = set()
        """The inbox rows this holder moved into its queues already."""

    @property
    def session_id(self) -> str:
        return self._lease.session_id

    @property
    def epoch(self) -> int:
        return self._lease.epoch

    @property
    def lost(self) -> bool:
        """True once a commit found that this holder lost the session (or it was closed)."""
        return self._failure is not None

    @property
    def inbox_pending(self) -> bool:
        """True while entries that delete inbox rows wait for a commit (one failed)."""
        return bool(self._pending_inbox)

    @property
    def failure(self) -> BaseException | None:
        """Why nothing more is written (what flushes raise), or None while commits go on."""
        return self._failure

    # --- noting ------------------------------------------------------------------------------

    def note(self, kind: EntryKind, payload: Any) -> int:
        """Note an entry for the next commit; returns its seq. It is encoded here, once: the
        log holds what ``payload`` was when its event was applied, even if the application
        changes the object before the commit."""
        seq = self._next_seq
        self._next_seq = seq + 1
        self._pending.append(encode_or_stand_in(self.session_id, Note(seq, kind, payload, _now())))
        inbox = inbox_row(kind, payload)
        if inbox is not None:  # whoever noted the entry, the commit that logs it deletes the row
            self._pending_inbox.append(inbox)
        return seq

    def record(self, event: AgentEvent) -> bool:
        """Note what ``event`` changed; True when it must be durable before its delivery
        (``message_end``, ``tool_execution_end``, ``agent_end``)."""
        cls = type(event)
        if cls is MessageUpdate:
            return False
        if cls is MessageStart:
            check_loggable(event.message)  # type: ignore[union-attr]
            return False
        if cls is MessageEnd:
            message = event.message  # type: ignore[union-attr]
            check_loggable(message)  # the close-out ends a message its start refused
            waiting = self._queued.get(id(message))
            if waiting:
                ref, queue, _ = waiting.pop(0)
                if not waiting:
                    del self._queued[id(message)]
                self.note("drained", {"queue": queue, "ref": ref})
            elif type(message) is ToolResultMessage:
                text = self._rebuildable(message)
                if text is not None:  # durable through its tool_result: no flush
                    seq = self._next_seq
                    self._next_seq = seq + 1
                    self._pending.append((seq, "message", text, _now(), FORMAT_VERSION))
                    self._count += 1
                    self._last = message
                    return False
            self.note("message", message)
            self._count += 1
            self._last = message
            if self.early_intents and isinstance(message, AssistantMessage):
                self._note_early_intents(message)
            return True
        if cls is ToolExecutionEnd:
            self.note("tool_result", event)
            self._results[event.tool_call_id] = self._pending[-1]  # type: ignore[union-attr]
            return True
        if cls is AgentStart:
            self._run_start()
            return False
        if cls is AgentEnd:
            last = self._last
            reason = last.stop_reason if isinstance(last, AssistantMessage) else "stop"
            self.note("run_end", {"reason": reason})
            return True
        if cls is CompactionEnd and event.summary is not None:  # type: ignore[union-attr]
            return self._note_compaction(event)  # type: ignore[arg-type]
        if cls is CompactionStart:  # what it compacts is in the log (a setter just before)
            self._log_if_replaced()
            return False
        if cls is ToolApprovalRequest:
            data = {
                "toolCallId": event.tool_call_id,  # type: ignore[union-attr]
                "toolName": event.tool_name,  # type: ignore[union-attr]
                "arguments": event.args,  # type: ignore[union-attr]
            }
            self.note("approval", data)
            return True
        return False

    def decided(self, tool_call_id: str, decision: ToolDecision) -> None:
        """Note a decision about a waiting call (durable at the next flush: at the latest
        before the call runs, whose intent is flushed first)."""
        data: dict[str, Any] = {
            "toolCallId": tool_call_id,
            "approved": decision.approved,
            "reason": decision.reason,
        }
        if self.from_inbox is not None:
            data["inbox"] = self.from_inbox  # the store.approve() row: deleted by this commit
        self.note("decision", data)

    def _note_compaction(self, event: CompactionEnd) -> bool:
        """Log a compaction that made a summary: the agent's transcript (already replaced) is
        that summary, the system messages it kept from before the cut (``kept_system``), and
        the messages kept from index ``first_kept`` of the one before. Durable
        before ``compaction_end`` is delivered; a crash before that loses the summary only."""
        agent = self.agent
        messages: Sequence[AgentMessage] = agent.state.messages if agent is not None else ()
        head = messages[0] if messages else None
        if not isinstance(head, CompactionSummary) or event.first_kept is None:
            return False  # not this recorder's agent's transcript: the next run logs it whole
        kept = len(messages) - 1 - len(event.kept_system)
        data: dict[str, Any] = {
            "summary": head.summary,
            "tokensBefore": head.tokens_before,
            "firstKept": event.first_kept,
            "keptCount": kept if event.kept_count is None else event.kept_count,
            "timestamp": head.timestamp,
        }
        if event.kept_system:  # only then: older readers lose nothing else
            data["systemKept"] = list(event.kept_system)
        self.note("compaction", data)
        if data["keptCount"] != kept:  # appended in place meanwhile, never logged: log it all
            self.note_transcript(messages)
        self._count = len(messages)
        self._last = messages[-1]
        return True

    def _rebuildable(self, message: ToolResultMessage) -> str | None:
        """The entry text of ``message`` when a durable ``tool_result`` entry rebuilds it
        exactly on resume (the loader turns a logged result without its message into the
        message; see ``_logged_result``): then the message needs no commit of its own before
        its end. None otherwise. Compared as committed JSON, so a result changed after its
        entry was written (a ``details`` dict shared between calls) does not count as rebuilt.
        The text comes from the JSON just compared, so the message is encoded once."""
        row = self._results.pop(message.tool_call_id, None)
        if row is None:
            return None
        seq, _, logged, noted_at, _ = row
        if seq > self._durable_seq or message.timestamp != noted_at:
            return None
        if not _entry_fields_only(message):  # usage etc.: the message is logged whole
            return None
        try:
            written = to_json(message)
            entry = tool_result_data(
                message.tool_call_id, message.tool_name, written, message.is_error
            )
            return dumps(written) if dumps(entry) == logged else None
        except Exception:  # not encodable as it stands: noting it logs a stand-in
            return None

    def _note_early_intents(self, message: AssistantMessage) -> None:
        """Put the intents of the calls that will execute at once in this message's commit.

        Only when no application hook stands between the message and ``execute``: the loop
        then goes straight from this message's end to preparing and running its calls (the
        argument validation is all that can still stop one, and a call that fails it has its
        error result logged). In a parallel batch that is every call (or the first
        ``max_parallel_tools``); in a sequential one, the first. This saves a commit per turn;
        the cost is that a crash in the microseconds between this commit and ``execute``
        reports "outcome_unknown" where "not_started" was true (never the other way round).
        """
        if message.stop_reason not in ("toolUse", "stop") or self.agent is None:
            return
        calls = message.tool_calls
        if not calls:
            return
        tools = self.agent.state.tools
        batch = [_tool_named(tools, call.name) for call in calls]  # no dict per message
        sequential = self.agent.tool_execution == "sequential" or any(
            tool is not None and tool.execution_mode == "sequential" for tool in batch
        )
        # the calls that start at once: one in a sequential batch, at most max_parallel_tools
        # (calls start in source order as slots free up) in a parallel one
        limit = 1 if sequential else (self.agent.max_parallel_tools or len(calls))
        for call, tool in zip(calls[:limit], batch, strict=False):
            if tool is not None and tool.requires_approval is False:  # may wait: not early
                self.note("tool_intent", call)
                self._early.add(call.id)

    def intend(self, call: ToolCall) -> bool:
        """Note ``call``'s intent; False when it is in a commit already (no flush needed)."""
        if call.id in self._early:
            self._early.discard(call.id)
            return False
        self.note("tool_intent", call)
        return True

    def _run_start(self) -> None:
        self._results.clear()  # a result whose message never ended (a failed close-out)
        agent = self.agent
        if agent is not None:
            state = agent.state
            self.note_settings(state)
            self._log_if_replaced()
        self.note("run_start", {})

    def _log_if_replaced(self) -> None:
        """Log the agent's transcript whole when it is not the one the log describes (the
        application replaced it: ``reset()``, an assignment)."""
        messages = self.agent.state.messages if self.agent is not None else None
        if messages is not None and (
            len(messages) != self._count or (messages and messages[-1] is not self._last)
        ):
            self.note_transcript(messages)

    def note_settings(self, state: AgentState) -> None:
        """Log the model, system prompt and thinking level when they changed."""
        key = (state.model, state.system_prompt, state.thinking_level)
        if self._settings_of is not None and all(
            a is b for a, b in zip(key, self._settings_of, strict=True)
        ):
            return
        settings = settings_json(state)
        self._settings_of = key
        if settings != self._settings:
            self._settings = settings
            self.note("state", settings)

    def note_transcript(self, messages: Sequence[AgentMessage]) -> None:
        """Log a replaced transcript (later entries build on it). A message the log could not
        give back (an unregistered type's) is left out, with a warning: a resumed transcript
        lacks it, but the session still opens."""
        kept = [message for message in messages if carries_message(message)]
        if len(kept) != len(messages):
            left_out = sorted({type(m).__qualname__ for m in messages if not carries_message(m)})
            sessions_logger.warning(
                "session %r: the transcript's %s messages are not logged (register their "
                "types with pi_trio.wire.register_message_type)",
                self.session_id,
                ", ".join(left_out),
            )
        self.note("transcript", kept)
        self._count = len(messages)
        self._last = messages[-1] if messages else None

    def check_message(self, message: AgentMessage) -> None:
        """Refuse a message the log could not give back (see :func:`check_loggable`)."""
        check_loggable(message)

    def note_message(self, message: AgentMessage) -> None:
        """Log a message appended outside a run (a repair)."""
        self.note("message", message)
        self._count += 1
        self._last = message

    def queued(self, kind: str, message: AgentMessage) -> None:
        """Note a ``steer()``/``follow_up()``; it is durable at the next flush (at the latest
        before a run takes it)."""
        check_loggable(message)
        queue = _queue_name(kind)
        seq = self.note("queued", (queue, message, self.from_inbox))
        self.adopt_queued(seq, queue, message)

    def adopt_queued(self, seq: int, queue: QueueName, message: AgentMessage) -> None:
        """Know ``message`` as queued by the entry ``seq`` (a resumed session's queue)."""
        self._queued.setdefault(id(message), []).append((seq, queue, message))

    def cleared(self, kind: str) -> None:
        """Note that a queue was emptied (its messages will not come back on resume)."""
        queue = _queue_name(kind)
        self.note("cleared", {"queue": queue})
        for key in list(self._queued):
            left = [item for item in self._queued[key] if item[1] != queue]
            if left:
                self._queued[key] = left
            else:
                del self._queued[key]

    # --- committing --------------------------------------------------------------------------

    async def flush(self) -> None:
        """Commit everything noted so far (one transaction, shared with concurrent flushes).

        Returns at once when nothing is pending. Cancellation: a commit in flight is not
        abandoned (it completes or rolls back; its entries stay pending if it failed); a flush
        that was only waiting for another's commit stops waiting.

        Raises:
            pt.SessionBusyError: this holder lost the session, or the block that opened it ended
                (nothing more is written, ever, under this lease).
            Exception: the backend's failure (a full disk...); the entries stay pending, and
                the next flush tries them again.
        """
        target = self._next_seq - 1
        while self._durable_seq < target:
            if self._failure is not None:
                raise SessionBusyError(str(self._failure), session_id=self.session_id)
            if self._writing:
                if self._written is None:
                    self._written = trio.Event()
                await self._written.wait()
                continue
            rows, self._pending = self._pending, []
            if not rows:
                return
            inbox, self._pending_inbox = self._pending_inbox, []
            self._writing = True
            try:
                if inbox:
                    await self._backend.append(self._lease, rows, inbox)
                else:
                    await self._backend.append(self._lease, rows)
            except BaseException as exc:
                self._pending[:0] = rows
                self._pending_inbox[:0] = inbox
                if isinstance(exc, SessionBusyError):
                    self._failure = exc
                raise
            else:
                self._durable_seq = rows[-1][0]
            finally:
                self._writing = False
                written, self._written = self._written, None
                if written is not None:
                    written.set()

    def lose(self, error: SessionBusyError) -> None:
        """This holder lost the session: no more writes (``error`` is what flushes raise)."""
        if self._failure is None:
            self._failure = error

    def close(self) -> None:
        """No more writes under this lease (the ``open_agent`` block ended)."""
        if self._failure is None:
            self._failure = SessionBusyError(
                f"session {self.session_id!r} was closed: its open_agent() block has ended",
                session_id=self.session_id,
            )
