"""The log's messages: written as ``pt.to_json`` writes them and read back by ``pt.from_json``
(whose generated reader and checked path tests/test_wire_reader.py compares)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux
from pi_trio.sessions._entries import Note, dumps, encode, read_message

from ..pi_fixtures import FIXTURE_DIR, requires_fixtures
from ..support import SAMPLE_MESSAGES
from ._helpers import calls, make_tool, rows

PI16_TRACES = Path(__file__).parents[1] / "data" / "pi16" / "traces.json"

# --- writing: the log stores pt.to_json's JSON ---------------------------------------------

WRITTEN: list[pt.AgentMessage] = [
    *SAMPLE_MESSAGES,
    pt.UserMessage([], timestamp=1),
    pt.AssistantMessage(
        [pt.ThinkingContent("plain"), pt.TextContent("t")], api="a", provider="p", model="m"
    ),
    pt.ToolResultMessage("c3", "t", [], details={"deep": [[[{"x": 1.5}]]], "é": "ü"}),
    pt.ToolResultMessage("c4", "t", [pt.TextContent("x")], details=[1, "two", False, None]),
]


def _logged(message: pt.AgentMessage) -> str:
    """The data text the log stores for ``message``."""
    return encode(Note(1, "message", message, 0))[2]


def _fixture_messages() -> list[pt.AgentMessage]:
    items: list[Any] = []
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        items.extend(json.loads(path.read_text()).get("finalMessages") or [])
    items.extend(json.loads(PI16_TRACES.read_text())["messages"])
    return [pt.from_json(item, pt.AgentMessage) for item in items]  # type: ignore[arg-type]


@requires_fixtures
@pytest.mark.parametrize("source", ["written", "fixtures"])
def test_an_entry_is_pt_to_json_and_reads_back_as_written(source: str) -> None:
    """Every message of pi 0.73.1's fixtures and pi 1.6's traces: the log's bytes are
    ``pt.to_json``'s JSON, and resume reads them back into an equal message."""
    messages = WRITTEN if source == "written" else _fixture_messages()
    assert source == "written" or len(messages) > 50
    for message in messages:
        text = _logged(message)
        assert text == dumps(pt.to_json(message))  # the same keys in the same order
        assert read_message("s", 1, json.loads(text)) == pt.from_json(
            json.loads(text),
            pt.AgentMessage,  # type: ignore[arg-type]
        )


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "details",
    [
        {"when": {1, 2}},  # not JSON: to_json's hooks decide
        {1: "an int key"},
        {"nan": float("nan")},
        (1, 2),
        _nested(40),
        pt.TextContent("a record"),
    ],
    ids=["set", "int-key", "nan", "tuple", "deep", "record"],
)
def test_unusual_free_form_values_are_logged_as_to_json_writes_them(details: Any) -> None:
    for message in (
        pt.ToolResultMessage("c", "t", [pt.TextContent("x")], details=details),
        pt.AssistantMessage([pt.ToolCall("c", "t", {"a": details})], "a", "p", "m"),
    ):
        assert _logged(message) == dumps(pt.to_json(message))


class _Custom(pt.UserMessage):
    pass


def test_a_subclass_is_logged_as_to_json_writes_it() -> None:
    assert _logged(_Custom("hi", timestamp=1)) == dumps(pt.to_json(_Custom("hi", timestamp=1)))


async def _plain(call_id: str, params: Any, on_update: Any) -> str:
    return "plain"  # details None


async def _detailed(call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    await trio.lowlevel.checkpoint()
    content: list[pt.TextContent | pt.ImageContent] = [
        pt.TextContent('seen "é"'),
        pt.ImageContent("aGk=", "image/png"),
    ]
    return pt.ToolResult(content, details={"n": params["n"], "list": [1.5, None, True]})


async def _prompted(path: Path, scripted: faux.FauxModel, tools: list[pt.AgentTool]) -> None:
    state = pt.AgentState(model=scripted.model, tools=tools)
    async with (
        pt.open_session_store(path) as store,
        store.open_agent("s", initial_state=state, stream_fn=scripted) as agent,
    ):
        await agent.prompt("go")


async def test_logged_entries_are_the_text_pi_s_json_encodes_to(tmp_path: Path) -> None:
    # tool-result messages ride on their tool_result's commit, written once: byte for byte
    # what encoding the message itself gives
    path = tmp_path / "agents.db"
    scripted = faux.FauxModel([calls("plain", "detailed", "plain"), faux.assistant_message("ok")])
    tools = [make_tool("plain", _plain), make_tool("detailed", _detailed)]
    await _prompted(path, scripted, tools)
    db = sqlite3.connect(path)
    try:
        logged = db.execute("SELECT kind, data FROM pi_trio_entries ORDER BY seq").fetchall()
    finally:
        db.close()
    results = [text for kind, text in logged if kind == "tool_result"]
    messages = [text for kind, text in logged if kind == "message"]
    assert len(results) == 3 and len(messages) == 6
    for text in results:
        assert text == dumps(json.loads(text))
    for text in messages:
        message = pt.from_json(json.loads(text), pt.AgentMessage)  # type: ignore[arg-type]
        assert text == dumps(pt.to_json(message))


async def _structured_too_deep(call_id: str, params: Any, on_update: Any) -> pt.ToolResult:
    tree: Any = 1
    for _ in range(70):
        tree = [tree]
    return pt.ToolResult(
        [pt.TextContent("3 rows")], details={"rows": 3}, structured_content={"tree": tree}
    )


async def test_a_tool_result_entry_holds_only_content_and_details(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What the entry does not store (structured content nested too deep to write) does not
    turn its details into a stand-in."""
    path = tmp_path / "agents.db"
    scripted = faux.FauxModel([calls("deep"), faux.assistant_message("ok")])
    tools = [make_tool("deep", _structured_too_deep)]
    await _prompted(path, scripted, tools)
    (result,) = [data for _, kind, data, _ in rows(path) if kind == "tool_result"]
    assert result["details"] == {"rows": 3}
    assert "tool_result" not in caplog.text
