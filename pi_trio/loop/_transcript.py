"""``Transcript``: one run's messages and where each one is in its life.

Every message the run adds goes through three steps: *taken* (the run decided it belongs in the
transcript: a prompt, a queued message it drained, a finished response, a tool result), then
*started* (``message_start`` applied), then *ended* (``message_end`` applied: it is appended to
``messages``, the live list the caller passed in, and to ``new_messages``). The loop applies
each event here before it sends it, so at any moment the transcript says exactly which messages
still need a ``message_start`` or a ``message_end``: :meth:`Transcript.finish` produces those
events when a run is closed early, and after it the transcript is complete.

``messages`` grows at ``message_end`` (pi's ``state.messages``); what a request sends is always
the ended messages (every message is ended before the model is called).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TypeVar, cast, overload

from ..coding_messages import as_llm_message
from ..events import AgentEvent, MessageEnd, MessageStart
from ..messages import (
    AgentMessage,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["Transcript", "TranscriptView", "default_convert_to_llm"]

T = TypeVar("T")

_LLM_TYPES = (UserMessage, AssistantMessage, ToolResultMessage, SystemMessage)


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """pi's default: user, assistant, tool-result and system messages pass; pi's coding-agent
    messages (:mod:`pi_trio.coding_messages`: summaries, extension messages, shell commands)
    become user messages, as its ``convertToLlm`` makes them; an application's own messages do
    not pass."""
    seen = [m for m in messages if isinstance(m, _LLM_TYPES)]
    if len(seen) == len(messages):  # the usual transcript: one pass, no call per message
        return seen
    return [form for m in messages if (form := as_llm_message(m)) is not None]


class TranscriptView(Sequence[T]):
    """A read-only view of the first ``length`` items of an append-only list: an O(1) snapshot
    of the transcript for one request (valid while that request runs: a compaction later
    rewrites the list; copy it to keep it)."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("transcript index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._length)

    def __repr__(self) -> str:
        return f"TranscriptView({self._items[: self._length]!r})"


class Transcript:
    """The messages of one run: ended, open (started, not ended) and taken (not started).

    Args:
        messages: the live transcript; ended messages are appended to it.
        incremental_llm: keep the default ``convert_to_llm`` view up to date message by
            message, so a request costs the same on a long transcript as on a short one.
    """

    __slots__ = ("_llm", "_llm_base", "messages", "new_messages", "open", "taken")

    def __init__(self, messages: list[AgentMessage], *, incremental_llm: bool) -> None:
        self.messages = messages
        self.new_messages: list[AgentMessage] = []
        self.open: AgentMessage | None = None
        # a list, not a deque: it is nearly always empty, and a deque costs ~760 bytes per run;
        # the next one to start last, so starting it pops the end: O(1), where deleting the
        # head made announcing n taken messages (a prompt of n, a steering batch) O(n**2)
        self.taken: list[AgentMessage] = []
        # The model's view, kept incrementally: ``messages`` itself while it holds only
        # messages for the model (no copy of the transcript per run: 8 bytes a message per
        # running agent), a filtered copy once it holds others; None when not kept.
        self._llm: list[Message] | None = None
        self._llm_base = len(messages)  # its length before the run: + new_messages while shared
        if incremental_llm:
            if all(isinstance(m, _LLM_TYPES) for m in messages):
                self._llm = cast("list[Message]", messages)
            else:
                self._llm = default_convert_to_llm(messages)

    def take(self, messages: Sequence[AgentMessage]) -> bool:
        """Add messages that will be announced next; True when there were any."""
        if messages:
            self.taken[:0] = reversed(messages)  # after the ones already taken
        return bool(messages)

    def next_taken(self) -> AgentMessage:
        """The taken message to start next (there must be one)."""
        return self.taken[-1]

    def start(self, message: AgentMessage) -> None:
        """``message_start``: the message is open (and no longer taken, if it was)."""
        taken = self.taken
        if taken and taken[-1] is message:
            taken.pop()
        self.open = message

    def end(self, message: AgentMessage) -> None:
        """``message_end``: the message is ended (appended to ``messages``)."""
        self.open = None
        self.messages.append(message)
        self.new_messages.append(message)
        llm = self._llm
        if llm is None or llm is self.messages:  # not kept, or shared: grows with messages
            if llm is not None and not isinstance(message, _LLM_TYPES):
                # the first message the model does not see: a filtered copy from now on
                self._llm = default_convert_to_llm(self.messages)
        elif isinstance(message, _LLM_TYPES):
            llm.append(message)
        else:
            form = as_llm_message(message)
            if form is not None:
                llm.append(form)

    def replace(self, messages: Sequence[AgentMessage]) -> None:
        """Compaction: the ended messages become ``messages``, in place (the list is the
        caller's: the agent's ``state.messages``). No message may be open. ``new_messages``
        keeps what the run added; the model's view is rebuilt once, from the new list. A
        :class:`TranscriptView` handed out earlier (a past request's messages) may share the
        rewritten list: it is valid during its request only, as its docstring says."""
        assert self.open is None, "a transcript is replaced between messages only"
        self.messages[:] = messages
        if self._llm is not None:
            self._llm = default_convert_to_llm(self.messages)

    def llm_view(self) -> Sequence[Message] | None:
        """The model's view of the ended messages, when it is kept incrementally."""
        llm = self._llm
        if llm is None:
            return None
        if llm is self.messages and len(llm) != self._llm_base + len(self.new_messages):
            # changed other than by this run (a listener added or removed messages): the
            # model sees what it holds now, filtered, and the view is a copy from here on
            llm = self._llm = default_convert_to_llm(llm)
        return TranscriptView(llm, len(llm))

    def finish(self) -> list[AgentEvent]:
        """The events that end the open message and announce every taken one, in order
        (not yet applied)."""
        events: list[AgentEvent] = []
        if self.open is not None:
            events.append(MessageEnd(self.open))
        for message in reversed(self.taken):
            events += [MessageStart(message), MessageEnd(message)]
        return events
