"""The shape every run's event stream must have, aborted or not."""

from __future__ import annotations

from collections.abc import Sequence

import pi_trio as pt


def assert_event_grammar(events: Sequence[pt.AgentEvent]) -> None:
    """agent_start first and agent_end last, once each; turns and messages properly nested;
    updates only inside an assistant message; each tool call started once and ended once,
    before its result message."""
    types = [e.type for e in events]
    assert types and types[0] == "agent_start", types[:3]
    assert types[-1] == "agent_end" and types.count("agent_end") == 1, types[-3:]
    assert types.count("agent_start") == 1
    in_turn = False
    open_message: pt.AgentMessage | None = None
    started: set[str] = set()
    ended: set[str] = set()
    for i, event in enumerate(events[1:-1], start=1):
        where = f"event {i} ({event.type}) in {types}"
        if isinstance(event, pt.TurnStart):
            assert not in_turn, where
            in_turn = True
        elif isinstance(event, pt.TurnEnd):
            assert in_turn and open_message is None, where
            in_turn = False
        else:
            assert in_turn, where
        if isinstance(event, pt.MessageStart):
            assert open_message is None, where
            open_message = event.message
        elif isinstance(event, pt.MessageUpdate):
            assert isinstance(open_message, pt.AssistantMessage), where
        elif isinstance(event, pt.MessageEnd):
            assert open_message is not None and open_message.role == event.message.role, where
            if isinstance(event.message, pt.ToolResultMessage):
                assert event.message.tool_call_id in ended, where
            open_message = None
        elif isinstance(event, pt.ToolExecutionStart):
            assert open_message is None and event.tool_call_id not in started, where
            started.add(event.tool_call_id)
        elif isinstance(event, pt.ToolExecutionUpdate):
            assert event.tool_call_id in started and event.tool_call_id not in ended, where
        elif isinstance(event, pt.ToolExecutionEnd):
            assert event.tool_call_id in started and event.tool_call_id not in ended, where
            ended.add(event.tool_call_id)
    assert not in_turn and open_message is None
    assert started == ended, f"started but never ended: {started - ended}"
