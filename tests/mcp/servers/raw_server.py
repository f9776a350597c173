"""A stdio MCP server written by hand (no SDK), for what the SDK's servers never send: the
MCP tests start it as a subprocess, one misbehaviour per mode.

    python raw_server.py latin1    # the first call's output holds a line that is not UTF-8
    python raw_server.py restart_hangs  # a call exits the process; a second start of it
                                   # (the file $RAW_STARTED exists) never answers the handshake
    python raw_server.py odd_tools # tools/list: a schema no validator takes, a regex that is
                                   # ECMA-262's only, a name twice, dotted names (one of
                                   # them another's once renamed); the same nextCursor on
                                   # every page

``tools/call`` answers ``echo: <text>`` for any tool.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

MODE = sys.argv[1]
ANY = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [{"name": "echo", "description": "Echo.", "inputSchema": ANY}]
if MODE == "odd_tools":
    TOOLS += [
        {"name": "broken", "inputSchema": {"type": "object", "properties": {"x": {"type": "no"}}}},
        {
            "name": "greet",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "pattern": "^\\p{L}+$"}},
            },
        },
        {"name": "echo", "description": "A second echo.", "inputSchema": ANY},
        {"name": "files.read", "description": "Read.", "inputSchema": ANY},
        {"name": "get.file", "description": "A dotted name.", "inputSchema": ANY},
        {"name": "get_file", "description": "Its own name.", "inputSchema": ANY},
        {"name": "put.file", "description": "A dotted name.", "inputSchema": ANY},
        {"name": "put_file", "inputSchema": {"type": "object", "properties": {"x": {"type": 1}}}},
        {"name": "", "description": "No name.", "inputSchema": ANY},
    ]


def send(message: dict[str, object]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def answer(request: dict[str, object]) -> dict[str, object] | None:
    method = request.get("method")
    if method == "initialize":
        if MODE == "restart_hangs":
            started = Path(os.environ["RAW_STARTED"])
            if started.exists():
                return None  # no answer: the caller gives up
            started.write_text("started")
        params = request["params"]
        assert isinstance(params, dict)
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS, **({"nextCursor": "again"} if MODE == "odd_tools" else {})}
    if method == "tools/call":
        params = request["params"]
        assert isinstance(params, dict)
        if MODE == "restart_hangs":
            os._exit(3)
        if MODE == "latin1" and not getattr(answer, "done", False):
            answer.done = True  # type: ignore[attr-defined]
            note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info",'
            sys.stdout.buffer.write(note + b'"data":"caf\\xe9"}}\n'.replace(b"\\xe9", b"\xe9"))
        text = (params.get("arguments") or {}).get("text", "")  # type: ignore[union-attr]
        if params.get("name") in ("get.file", "get_file", "put.file"):
            text = f"{params['name']} {text}"
        return {"content": [{"type": "text", "text": f"echo: {text}"}]}
    return None


def main() -> None:
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        result = answer(request)
        if result is None and request.get("method") == "initialize":
            continue
        if result is None:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
