"""S7 through the openai-completions provider, against a server on 127.0.0.1.

The server runs in its own thread with its own ``trio.run`` (so the task count and the
instrument see only the agent's side) and answers like OpenAI's chat completions: each answer
streams its text in 8 content chunks, then one chunk per tool call (id, name, arguments), the
finish reason, a usage chunk and ``[DONE]``. Which answer to give is read from the request: the
run (header ``x-bench-run``) and the number of assistant messages sent so far. After every run
the client's pool must have no connection checked out (``pool_in_use``).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import h11
import httpx
import trio

import pi_trio as pt
from pi_trio.providers import pool_in_use

from . import _script as script
from ._agents import make_agent
from ._common import s7_schedule
from ._stress import StressStats, stress_run
from ._tasks import start_tracking

RUN_HEADER = "x-bench-run"


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> bytes:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}}
    if finish:
        choice["finish_reason"] = finish
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "choices": [choice]}
    return f"data: {json.dumps(body)}\n\n".encode()


_USAGE = (
    "data: "
    + json.dumps(
        {
            "id": "chatcmpl-bench",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }
    )
    + "\n\ndata: [DONE]\n\n"
).encode()


def answer_chunks(run: int, turn: int, sleeps: list[list[float]]) -> list[bytes]:
    """The SSE body of the answer to ``run``'s request number ``turn``."""
    if turn >= len(sleeps):
        pieces = script.scripted([]).chunker(script.FINAL_TEXT)
        chunks = [_chunk({"role": "assistant", "content": ""})]
        chunks += [_chunk({"content": piece}) for piece in pieces]
        return [*chunks, _chunk(finish="stop"), _USAGE]
    pieces = script.scripted([]).chunker(f"Turn {turn}: calling sleep now.")
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": piece}) for piece in pieces]
    for index, ms in enumerate(sleeps[turn]):
        call = {
            "index": index,
            "id": f"call_{run}_{turn}_{index}",
            "type": "function",
            "function": {"name": "sleep", "arguments": json.dumps({"ms": ms, "cooperative": True})},
        }
        chunks.append(_chunk({"tool_calls": [call]}))
    return [*chunks, _chunk(finish="tool_calls"), _USAGE]


class CompletionsServer:
    """The scripted chat-completions server; ``plans[run]`` holds each run's tool sleeps."""

    def __init__(self) -> None:
        self.plans: dict[int, list[list[float]]] = {}
        self.requests = 0

    async def serve(self, ready: queue.Queue[Any]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            ready.put((port, trio.lowlevel.current_trio_token(), nursery.cancel_scope))

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read(stream, conn)
                if request is None:
                    return
                headers, body = request
                run = int(headers.get(RUN_HEADER, "0"))
                turn = sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")
                self.requests += 1
                head = h11.Response(
                    status_code=200,
                    headers=[("content-type", "text/event-stream"), ("cache-control", "no-cache")],
                )
                await stream.send_all(conn.send(head) or b"")
                for chunk in answer_chunks(run, turn, self.plans.get(run, [])):
                    await stream.send_all(conn.send(h11.Data(data=chunk)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                if conn.our_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _read(
        self, stream: trio.SocketStream, conn: h11.Connection
    ) -> tuple[dict[str, str], dict[str, Any]] | None:
        headers: dict[str, str] = {}
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return None
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return headers, json.loads(body or b"{}")
            else:
                return None


@contextmanager
def server_thread() -> Iterator[tuple[CompletionsServer, int]]:
    """Run the server in a thread with its own Trio run; stop it on exit."""
    server = CompletionsServer()
    ready: queue.Queue[Any] = queue.Queue()
    thread = threading.Thread(target=trio.run, args=(server.serve, ready), daemon=True)
    thread.start()
    port, token, scope = ready.get(timeout=30)
    try:
        yield server, port
    finally:
        token.run_sync_soon(scope.cancel)
        thread.join(timeout=10)


def completions_model(port: int) -> pt.Model:
    return pt.Model(
        id="bench-model",
        name="Benchmark model",
        api="openai-completions",
        provider="openai",
        base_url=f"http://127.0.0.1:{port}/v1",
    )


async def s7_http(runs: int) -> dict[str, Any]:
    tracker = await start_tracking()
    stats = StressStats()
    checked_out = 0
    with server_thread() as (server, port):
        model = completions_model(port)
        limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
        async with httpx.AsyncClient(trust_env=False, limits=limits) as client:
            start = time.perf_counter()
            for run, (sleeps, abort_at) in enumerate(s7_schedule(runs)):
                server.plans[run] = sleeps
                options = pt.StreamOptions(
                    api_key="bench-key", http_client=client, headers={RUN_HEADER: str(run)}
                )
                agent = make_agent(model, [script.SLEEP], stream_options=options)
                await stress_run(agent, abort_at, tracker, stats)
                if pool_in_use(client):
                    checked_out += 1
            elapsed = time.perf_counter() - start
            result = stats.result(runs, elapsed)
            result["checks"]["pool_checked_out"] = checked_out + pool_in_use(client)
            result["info"]["requests"] = server.requests
    return result
