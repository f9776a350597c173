"""pi_trio inside a Trio service: a small HTTP server that runs one agent per request.

    python docs/examples/embed_service.py            # scripted model, no key needed
    PI_TRIO_MODEL=anthropic/claude-haiku-4-5 python docs/examples/embed_service.py
    curl -s localhost:8000/ask -d '{"question": "What is 12 * 7?", "deadline": 10}'

Each request gets a fresh Agent and a deadline (``trio.move_on_after``). When the deadline
hits, the run is aborted where it is: the partial answer comes back marked "aborted" and the
transcript is still valid, so it could be stored and continued. Shutting the server down
(Ctrl-C, or cancelling the nursery that runs ``serve``) aborts every run in flight the same
way: no task outlives the server.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import h11
import trio

import pi_trio as pt
from pi_trio.providers import faux

MAX_BODY = 64 * 1024


@pt.tool
async def multiply(a: float, b: float) -> str:
    """Multiply two numbers."""
    return str(a * b)


def text_of(message: pt.AgentMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, pt.TextContent))


def scripted_answer(
    context: pt.Context, options: pt.StreamOptions, index: int
) -> pt.AssistantMessage:
    """The stand-in model: calls ``multiply`` for "A * B" questions, else talks slowly."""
    last = context.messages[-1]
    if isinstance(last, pt.ToolResultMessage):
        return faux.assistant_message(f"The answer is {text_of(last)}.")
    question = text_of(last)
    numbers = [float(word) for word in question.replace("?", " ").split() if word.isdigit()]
    if "*" in question and len(numbers) == 2:
        return faux.assistant_message(
            faux.tool_call("multiply", {"a": numbers[0], "b": numbers[1]})
        )
    return faux.assistant_message("Let me think about that at length. " * 50)


def make_agent() -> pt.Agent:
    """A fresh agent for one request: a real model from PI_TRIO_MODEL, else a scripted one."""
    state = pt.AgentState(system_prompt="Answer briefly.")
    state.tools = [multiply]
    spec = os.environ.get("PI_TRIO_MODEL")
    if spec:
        provider, _, model_id = spec.partition("/")
        state.model = pt.get_model(provider, model_id)
        return pt.Agent(state)
    scripted = faux.FauxModel([scripted_answer] * 4, token_delay=0.01)
    state.model = scripted.model
    return pt.Agent(state, stream_fn=scripted)


async def answer(question: str, deadline: float) -> dict[str, Any]:
    """Run one agent on ``question`` for at most ``deadline`` seconds."""
    agent = make_agent()
    with trio.move_on_after(deadline) as scope:
        await agent.prompt(question)
    last = agent.state.messages[-1]
    assert isinstance(last, pt.AssistantMessage)
    return {
        "answer": "".join(b.text for b in last.content if isinstance(b, pt.TextContent)),
        "stopReason": last.stop_reason,
        "timedOut": scope.cancelled_caught,
        "transcript": [pt.to_json(m) for m in agent.state.messages],
    }


# --- HTTP/1.1 with h11 (a pi_trio dependency already), one request per connection --------


class BadRequest(Exception):
    pass


async def read_request(stream: trio.SocketStream, http: h11.Connection) -> tuple[str, str, bytes]:
    """The request's method, target and body, however the bytes arrive."""
    method = target = ""
    body = b""
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            http.receive_data(await stream.receive_some(4096))  # b"" at EOF: h11 says so
        elif isinstance(event, h11.Request):
            method, target = event.method.decode(), event.target.decode()
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY:
                raise BadRequest("body too large")
        elif isinstance(event, h11.EndOfMessage):
            return method, target, body
        else:  # ConnectionClosed before the request was whole
            raise BadRequest("incomplete request")


async def respond(
    stream: trio.SocketStream, http: h11.Connection, status: int, payload: dict[str, Any]
) -> None:
    body = json.dumps(payload).encode()
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
        ("connection", "close"),
    ]
    for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body)):
        await stream.send_all(http.send(event) or b"")
    await stream.send_all(http.send(h11.EndOfMessage()) or b"")


async def handle(stream: trio.SocketStream) -> None:
    # A client that goes away only ends its own request (its run is closed already).
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await handle_request(stream)


async def handle_request(stream: trio.SocketStream) -> None:
    http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_BODY)
    async with stream:
        try:
            method, path, body = await read_request(stream, http)
            if (method, path) != ("POST", "/ask"):
                await respond(stream, http, 404, {"error": "POST /ask"})
                return
            request = json.loads(body)
            question = str(request["question"])
            deadline = min(float(request.get("deadline", 30)), 120.0)
        except (BadRequest, h11.RemoteProtocolError, ValueError, KeyError, TypeError) as exc:
            if http.our_state is h11.SEND_RESPONSE:
                await respond(stream, http, 400, {"error": str(exc)})
            return
        await respond(stream, http, 200, await answer(question, deadline))


async def serve(
    port: int = 8000,
    host: str = "127.0.0.1",
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; ``task_status`` gets the listeners (``port=0``: any free port)."""
    await trio.serve_tcp(handle, port, host=host, task_status=task_status)


if __name__ == "__main__":
    print("POST http://127.0.0.1:8000/ask  {'question': ..., 'deadline': seconds}")
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(serve)
