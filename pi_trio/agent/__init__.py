"""The stateful ``Agent``: transcript, queues, subscribers and one abort scope over the loop."""

from __future__ import annotations

from ._agent import Agent, Listener
from ._inbox import QueuedMessage, QueueMode
from ._recorder import CheckingRecorder, QueueKind, Recorder
from ._settings import AgentSettings
from ._state import DEFAULT_MODEL, AgentState, ThinkingLevelSetting
from ._subscriptions import ChannelEvent, EventsReceiver, OverflowPolicy
from ._texts import BUSY_CONTINUE, BUSY_PROMPT, CONTINUE_FROM_ASSISTANT, NOTHING_TO_CONTINUE

__all__ = [
    "BUSY_CONTINUE",
    "BUSY_PROMPT",
    "CONTINUE_FROM_ASSISTANT",
    "DEFAULT_MODEL",
    "NOTHING_TO_CONTINUE",
    "Agent",
    "AgentSettings",
    "AgentState",
    "ChannelEvent",
    "CheckingRecorder",
    "EventsReceiver",
    "Listener",
    "OverflowPolicy",
    "QueueKind",
    "QueueMode",
    "QueuedMessage",
    "Recorder",
    "ThinkingLevelSetting",
]
