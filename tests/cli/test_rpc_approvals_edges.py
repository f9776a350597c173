"""``rpc`` while tool calls wait for a decision: a prompt is refused in its response (saying
to approve or deny first, or to queue it), a queued one goes after the decided calls."""

from __future__ import annotations

from typing import Any

import trio

from pi_trio.cli._agents import agent_factory
from pi_trio.cli._approvals import with_approvals
from pi_trio.cli._lines import StreamLines
from pi_trio.cli._rpc import RpcSession
from pi_trio.cli._rpc_sessions import MemorySessions

from ._helpers import JsonLinesClient, is_type


async def test_a_prompt_while_calls_wait_is_refused_and_a_queued_one_waits(
    nursery: trio.Nursery,
) -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    make = with_approvals(agent_factory("faux", token_delay=0), {"calculate"})
    nursery.start_soon(RpcSession(MemorySessions(make), StreamLines(server_stream)).run)
    client = JsonLinesClient(client_stream)
    await client.command({"id": "1", "type": "prompt", "message": "what is 2+3"})
    seen = await client.until(is_type("agent_settled"))
    (request,) = [line for line in seen if line["type"] == "tool_approval_request"]
    call_id = request["toolCallId"]
    reply: dict[str, Any] = await client.command({"id": "2", "type": "prompt", "message": "hi"})
    assert reply["success"] is False, reply
    assert call_id in reply["error"] and "approve or deny" in reply["error"]
    queued = await client.command(
        {"id": "3", "type": "prompt", "message": "and 4*5", "streamingBehavior": "followUp"}
    )
    assert queued["success"] and queued["data"] == {"disposition": "queued"}
    approved = await client.command({"id": "4", "type": "approve", "toolCallId": call_id})
    assert approved["data"] == {"disposition": "continued"}
    seen = await client.until(is_type("agent_settled"))
    ends = [line for line in seen if line["type"] == "tool_execution_end"]
    assert ends[0]["toolCallId"] == call_id and ends[0]["result"]["content"][0]["text"] == "5"
    assert not [line for line in seen if line["type"] == "error"]
