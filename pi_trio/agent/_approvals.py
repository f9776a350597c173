"""The Agent's approval methods: decide about tool calls that wait for a person.

A call of a tool with ``requires_approval`` does not run: its run ends with the call in
``agent.state.pending_approvals``. ``approve``/``deny`` record a decision (synchronously, from
any task of the agent's Trio run; a durable session logs it), and ``continue_()`` runs the
decided calls, then calls the model again. Until every waiting call has a result, the model
is not called: ``prompt()`` refuses, steering and follow-ups queue.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..tools import ToolDecision
from ._recorder import Recorder
from ._state import AgentState

__all__ = ["AWAITING_DECISIONS", "Approvals", "DecisionRecorder", "undecided_text"]

AWAITING_DECISIONS = (
    "tool calls wait for a decision ({calls}): approve or deny each with "
    "agent.approve(tool_call_id) / agent.deny(tool_call_id, reason), then call "
    "agent.continue_(); the model is not called before they have results"
)


def undecided_text(state: AgentState) -> str:
    """Why a run cannot start: the calls still waiting (names and ids)."""
    calls = ", ".join(f"{call.name} {call.id!r}" for call in state.pending_approvals)
    return AWAITING_DECISIONS.format(calls=calls or "decided, not yet run")


@runtime_checkable
class DecisionRecorder(Recorder, Protocol):
    """A :class:`pt.Recorder` that also logs decisions about waiting tool calls (a durable
    session's: the decision survives a restart)."""

    def decided(self, tool_call_id: str, decision: ToolDecision) -> None:
        """Note a decision (durable at the recorder's next flush, before the call runs)."""
        ...


class Approvals:
    """``approve`` and ``deny`` of :class:`pt.Agent` (its state and recorder)."""

    @property
    def state(self) -> AgentState:
        raise NotImplementedError

    @property
    def recorder(self) -> Recorder | None:
        raise NotImplementedError

    def approve(self, tool_call_id: str) -> None:
        """Approve a waiting tool call: the next ``continue_()`` runs it.

        Synchronous; call it from any task of the agent's Trio run (from a thread:
        ``trio.from_thread.run_sync``). A call decided while its run is still going (the rest
        of the batch running) is run by the next ``continue_()``; a run aborted before its
        batch ended withdraws its requests (the calls get "aborted" results).

        Raises:
            KeyError: no call of that id waits, or it was decided already.
            TypeError: ``tool_call_id`` is not a string (pass the ToolCall's ``.id``).
        """
        self._decide(tool_call_id, ToolDecision(True))

    def deny(self, tool_call_id: str, reason: str = "") -> None:
        """Deny a waiting tool call: the next ``continue_()`` gives it an error result that
        says it was denied, and ``reason`` (which the model reads).

        Raises:
            KeyError: no call of that id waits, or it was decided already.
            TypeError: ``tool_call_id`` or ``reason`` is not a string.
        """
        self._decide(tool_call_id, ToolDecision(False, reason))

    def _decide(self, tool_call_id: str, decision: ToolDecision) -> None:
        self.state.decide(tool_call_id, decision)
        recorder = self.recorder
        if isinstance(recorder, DecisionRecorder):
            recorder.decided(tool_call_id, decision)
