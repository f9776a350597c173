"""pi 1.6 session files in and out of a store (SQLite and PostgreSQL): an import's transcript is
exactly the context pi's own ``buildSessionContext`` derives from the file, an export is a file
pi's ``SessionManager.open`` opens and derives the session's transcript from, and a file that is
not a pi 1.6 session is refused naming its line, with nothing imported."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ..pi_node import pi_session_context, record_pi_session, recorded_pi_context
from ._helpers import calls, make_tool, transcript_json

DATA = Path(__file__).resolve().parents[1] / "data" / "pi16"
RECORDED = DATA / "session_with_branch.jsonl"
# the same session with pi 1.6's system messages (record_session_file.mjs --system), as pi's
# coding agent writes every session since 0.86: one leads the transcript, a compaction saves it
WITH_SYSTEM = DATA / "session_with_system_messages.jsonl"


async def _imported(store: pt.SessionStore, session_id: str) -> list[Any]:
    return [e.data for e in await store.load(session_id) if e.kind == "message"]


async def test_an_import_is_the_context_pi_derives_from_the_file(store_url: str) -> None:
    pi = recorded_pi_context(str(RECORDED))
    async with pt.open_session_store(store_url) as store:
        session_id = await store.import_pi_session(RECORDED)
        assert session_id == pi["header"]["id"]  # the file's own id by default
        logged = await _imported(store, session_id)
        entries = await store.load(session_id)
        # reopened, the agent's transcript is the imported one, with pi's model and level
        model = pt.get_model("openai", "gpt-4o-mini")
        async with store.open_agent(
            session_id, initial_state=pt.AgentState(model=model), create=False
        ) as agent:
            resumed = transcript_json(agent.state.messages)
            assert agent.state.thinking_level == pi["thinkingLevel"] == "medium"
            assert agent.state.model is model
    assert logged == pi["messages"]
    assert resumed == logged
    assert [e.kind for e in entries] == ["state"] + ["message"] * len(logged)
    assert entries[0].data["model"]["provider"] == pi["model"]["provider"] == "openai"
    assert entries[0].data["model"]["id"] == pi["model"]["modelId"] == "gpt-4o-mini"
    # what the file holds that the context honours
    roles = [m["role"] for m in logged]
    assert roles[0] == "compactionSummary" and "branchSummary" in roles and "custom" in roles
    assert "bashExecution" in roles
    assert logged[1]["content"] == "Explain foo.py briefly."  # the current branch's edit
    assert not any("Rust." in json.dumps(m) for m in logged if m["role"] != "branchSummary")


def test_the_recorded_file_has_what_the_import_tests_need() -> None:
    entries = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    kinds = {e["type"] for e in entries}
    assert kinds >= {
        "session", "message", "model_change", "thinking_level_change", "compaction",
        "branch_summary", "custom", "custom_message", "label", "session_info", "context_edit",
    }  # fmt: skip
    # the leaf's branch is not the file's order: the entry before the branch summary is
    # not its parent
    at = next(i for i, e in enumerate(entries) if e["type"] == "branch_summary")
    assert entries[at]["parentId"] != entries[at - 1]["id"]


async def test_a_file_pi_records_now_imports_as_pi_derives_it(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.jsonl"
    pi = record_pi_session(fresh)
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        session_id = await store.import_pi_session(fresh, session_id="fresh")
        assert session_id == "fresh"
        assert await _imported(store, "fresh") == pi["messages"]


async def test_a_second_session_header_is_skipped_as_pi_skips_it(tmp_path: Path) -> None:
    joined = tmp_path / "joined.jsonl"
    text = RECORDED.read_text()
    joined.write_text(text + text.splitlines()[0] + "\n")  # two files joined, say
    pi = pi_session_context(joined)
    assert pi["messages"]  # pi reads past the second header
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        await store.import_pi_session(joined, session_id="joined")
        assert await _imported(store, "joined") == pi["messages"]


async def test_a_file_with_system_messages_imports_and_exports_as_pi_derives_it(
    tmp_path: Path,
) -> None:
    pi = pi_session_context(WITH_SYSTEM)
    assert [m["role"] for m in pi["messages"]][:2] == ["system", "compactionSummary"]
    out = tmp_path / "again.jsonl"
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        session_id = await store.import_pi_session(WITH_SYSTEM)
        assert await _imported(store, session_id) == pi["messages"]
        await store.export_pi_session(session_id, out)
    assert pi_session_context(out)["messages"] == pi["messages"]


async def _scripted_session(store: pt.SessionStore, session_id: str) -> list[Any]:
    """A durable agent's session with a tool call, a compaction summary it starts from, an
    extension's message and a branch summary; returns its transcript as pi's JSON."""

    def noop(call_id: str, params: Any, on_update: Any) -> str:
        return f"noop {params['n']}"

    scripted = faux.FauxModel([calls("noop"), faux.assistant_message("done")])
    at = 1_700_000_000_000
    start: list[pt.AgentMessage] = [
        pt.CompactionSummary("Earlier: the user set things up.", 5000, timestamp=at),
        pt.ExtensionMessage("reminder", [pt.TextContent("be careful")], False, {"n": 1}, at + 1),
        pt.BranchSummary("A detour that went nowhere.", "abc12345", timestamp=at + 2),
    ]
    state = pt.AgentState(model=scripted.model, tools=[make_tool("noop", noop)], messages=start)
    async with store.open_agent(session_id, initial_state=state, stream_fn=scripted) as agent:
        agent.state.thinking_level = "high"
        await agent.prompt("go")
        return transcript_json(agent.state.messages)


async def test_an_export_opens_in_pi_with_the_sessions_transcript(
    store_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "exported.jsonl"
    async with pt.open_session_store(store_url) as store:
        transcript = await _scripted_session(store, "support-42")
        await store.export_pi_session("support-42", out, cwd="/srv/app")
    pi = pi_session_context(out)
    assert pi["messages"] == transcript  # exactly: nothing here is a pi 1.6-only field
    assert [m["role"] for m in transcript][:4] == [
        "compactionSummary", "custom", "branchSummary", "user",
    ]  # fmt: skip
    assert pi["model"] == {"provider": "faux", "modelId": faux.FauxModel([]).model.id}
    assert pi["thinkingLevel"] == "high"
    assert pi["header"]["id"] == "support-42" and pi["header"]["cwd"] == "/srv/app"
    assert pi["header"]["version"] == 3
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["type"] for e in lines[:4]] == [
        "session",
        "compaction",
        "custom_message",
        "branch_summary",
    ]  # fmt: skip  (pi's own entries for them, not plain messages)
    assert pi["leaf"] == lines[-1]["id"] and pi["entries"] == len(lines) - 1


async def test_an_import_exported_again_is_what_pi_derived_from_the_original(
    tmp_path: Path,
) -> None:
    out = tmp_path / "again.jsonl"
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        session_id = await store.import_pi_session(RECORDED)
        await store.export_pi_session(session_id, out)
    original, again = recorded_pi_context(str(RECORDED)), pi_session_context(out)
    assert again["messages"] == original["messages"]
    assert (again["model"], again["thinkingLevel"]) == (original["model"], "medium")
    assert again["header"]["id"] == original["header"]["id"]


async def test_an_export_never_replaces_a_file_unless_asked(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        await store.import_pi_session(RECORDED, session_id="s")
        with pytest.raises(FileExistsError, match="overwrite=True"):
            await store.export_pi_session("s", out)
        assert out.read_text() == "keep me\n"
        await store.export_pi_session("s", out, overwrite=True)
        with pytest.raises(pt.SessionNotFoundError, match="'nope'"):
            await store.export_pi_session("nope", tmp_path / "nope.jsonl")
    assert json.loads(out.read_text().splitlines()[0])["type"] == "session"
    left = sorted(p.name for p in tmp_path.iterdir() if "jsonl" in p.name)  # noqa: ASYNC240
    assert left == ["out.jsonl"]  # no temporary file left beside it


@pytest.mark.parametrize("state", ["[]", '"x"', '{"model": "gpt"}'])
async def test_an_export_of_a_hand_edited_state_entry_is_a_log_error(
    tmp_path: Path, state: str
) -> None:
    """As opening the session would say (before: a bare AttributeError); nothing written."""
    from pi_trio.sessions._holders import new_holder

    out = tmp_path / "out.jsonl"
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        lease = await store.backend.acquire("s", new_holder("w"))
        assert not isinstance(lease, str)
        await store.backend.append(lease, [(1, "state", state, 1, 1)])
        await store.backend.release(lease)
        with pytest.raises(pt.SessionLogError, match="unreadable state entry"):
            await store.export_pi_session("s", out)
    assert not out.exists()


# --- what is refused ---------------------------------------------------------------------


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _broken(tmp_path: Path, how: str) -> tuple[Path, int]:
    """A copy of the recorded file, broken one way; and the line the error must name."""
    lines = _lines(RECORDED)
    if how == "not JSON":
        lines[5] = lines[5][:-7]
        line = 6
    elif how == "not a session":
        lines = lines[1:]
        line = 1
    elif how in ("version 2", "version 4"):
        header = json.loads(lines[0])
        header["version"] = int(how[-1])
        lines[0], line = json.dumps(header), 1
    elif how == "missing parent":  # the leaf's grandparent is gone
        parent = json.loads(lines[-1])["parentId"]
        at = next(i for i, text in enumerate(lines) if json.loads(text)["id"] == parent)
        del lines[at - 1]
        line = at  # the parent, one line up now
    elif how == "duplicate id":
        entry = json.loads(lines[3])
        entry["id"] = json.loads(lines[2])["id"]
        lines[3], line = json.dumps(entry), 4
    elif how in ("edit target a list", "thinking level a list"):
        last = json.loads(lines[-1])
        entry = {"id": "added", "parentId": last["id"], "timestamp": last["timestamp"]}
        if how == "edit target a list":
            entry |= {"type": "context_edit", "targetId": [last["id"]]}
        else:
            entry |= {"type": "thinking_level_change", "thinkingLevel": ["high"]}
        lines.append(json.dumps(entry))
        line = len(lines)
    elif how == "header id with NUL":
        header = json.loads(lines[0])
        header["id"] = "a\x00b"
        lines[0], line = json.dumps(header), 1
    elif how == "unreadable message":
        entry = json.loads(lines[-1])
        entry["message"]["role"] = "hologram"
        lines[-1], line = json.dumps(entry), len(lines)
    else:
        raise AssertionError(how)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, line


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("not JSON", "not JSON"),
        ("not a session", "not a pi session file"),
        ("version 2", "open it once with pi 1.6"),
        ("version 4", "reads version 3"),
        ("missing parent", "is not in the file"),
        ("duplicate id", "a second entry with the id"),
        ("unreadable message", "a message pi_trio cannot read"),
        ("edit target a list", "context_edit whose targetId is list"),  # before: TypeError
        ("thinking level a list", "unknown thinking level ['high']"),  # before: TypeError
        ("header id with NUL", "its session id cannot be a store's"),  # before: ValueError
    ],
)
async def test_a_bad_file_is_refused_naming_its_line_and_nothing_is_imported(
    store_url: str, tmp_path: Path, how: str, says: str
) -> None:
    path, line = _broken(tmp_path, how)
    async with pt.open_session_store(store_url) as store:
        with pytest.raises(pt.PiSessionFileError) as caught:
            await store.import_pi_session(path)
        assert await store.list_sessions() == []
    error = caught.value
    assert (error.path, error.line) == (str(path), line)
    assert f"{path}, line {line}: " in str(error) and says in str(error)
    assert str(error).endswith("nothing was imported")


async def test_pi_16s_max_thinking_level_is_clamped_to_xhigh(tmp_path: Path) -> None:
    lines = _lines(RECORDED)
    last = json.loads(lines[-1])
    change = {"type": "thinking_level_change", "thinkingLevel": "max"}
    change |= {"id": "added", "parentId": last["id"], "timestamp": last["timestamp"]}
    path = tmp_path / "max.jsonl"
    path.write_text("\n".join([*lines, json.dumps(change)]) + "\n")
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        session_id = await store.import_pi_session(path)
        async with store.open_agent(session_id) as agent:
            assert agent.state.thinking_level == "xhigh"  # pi clamps to the highest it has


async def test_an_empty_file_and_a_missing_one(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        with pytest.raises(pt.PiSessionFileError, match="empty: not a pi session file"):
            await store.import_pi_session(empty)
        with pytest.raises(FileNotFoundError):
            await store.import_pi_session(tmp_path / "missing.jsonl")
        assert await store.list_sessions() == []


async def test_an_existing_session_id_is_refused_and_left_alone(store_url: str) -> None:
    async with pt.open_session_store(store_url) as store:
        await store.import_pi_session(RECORDED, session_id="taken")
        before = await store.load("taken")
        with pytest.raises(pt.SessionExistsError, match="'taken' already exists") as caught:
            await store.import_pi_session(RECORDED, session_id="taken")
        assert caught.value.session_id == "taken"
        assert await store.load("taken") == before
        assert [info.session_id for info in await store.list_sessions()] == ["taken"]
        assert await store.import_pi_session(RECORDED, session_id="other") == "other"


async def test_a_failed_write_leaves_no_session_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        backend = store.backend

        async def failing_append(*args: Any, **kwargs: Any) -> None:
            raise pt.SessionStoreError("disk full (test)")

        monkeypatch.setattr(backend, "append", failing_append)
        with pytest.raises(pt.SessionStoreError, match="disk full"):
            await store.import_pi_session(RECORDED, session_id="s")
        monkeypatch.undo()
        assert await store.list_sessions() == []
        await store.import_pi_session(RECORDED, session_id="s")  # free to import again


async def test_when_the_clean_up_fails_too_the_imports_error_is_raised_and_one_warning_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with pt.open_session_store(tmp_path / "agents.db") as store:

        async def failing(*args: Any, **kwargs: Any) -> Any:
            raise pt.SessionStoreError("disk full (test)")

        async def failing_delete(*args: Any, **kwargs: Any) -> Any:
            raise pt.SessionStoreError("still full (test)")

        monkeypatch.setattr(store.backend, "append", failing)
        monkeypatch.setattr(store.backend, "delete", failing_delete)
        with pytest.raises(pt.SessionStoreError, match="disk full"):
            await store.import_pi_session(RECORDED, session_id="s")
    warnings = [r for r in caplog.records if r.name.startswith("pi_trio")]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"
    assert "could not delete the empty session" in warnings[0].getMessage()
    assert "still full" in warnings[0].getMessage()


async def test_a_file_that_stops_inside_a_tool_call_is_repaired_when_opened(
    tmp_path: Path,
) -> None:
    stopped = tmp_path / "stopped.jsonl"
    lines = _lines(RECORDED)[:5]  # header, thinking level, model, user, assistant (toolUse)
    assert json.loads(lines[-1])["message"]["stopReason"] == "toolUse"
    stopped.write_text("\n".join(lines) + "\n")
    model = pt.get_model("anthropic", "claude-sonnet-4-5")
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        session_id = await store.import_pi_session(stopped)
        assert len(await _imported(store, session_id)) == 2  # as it is
        async with store.open_agent(session_id, initial_state=pt.AgentState(model=model)) as agent:
            last = agent.state.messages[-1]
        assert isinstance(last, pt.ToolResultMessage) and last.is_error
        assert last.tool_call_id == "toolu_01"
        assert last.details == {"interrupted": "not_started"}


async def test_an_import_cancelled_while_reading_writes_nothing(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    shutil.copy(RECORDED, big)
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        with trio.CancelScope() as scope:
            scope.cancel()
            await store.import_pi_session(big)
        assert scope.cancelled_caught
        assert await store.list_sessions() == []
    assert os.path.exists(big)  # noqa: ASYNC240


async def test_on_postgresql_queued_input_counts_as_a_session_and_an_import_is_not_work(
    postgres_url: str,
) -> None:
    async with pt.open_session_store(postgres_url) as store:
        await store.enqueue("waiting", "hello")  # a session with no log yet, only input
        with pytest.raises(pt.SessionExistsError):
            await store.import_pi_session(RECORDED, session_id="waiting")
        await store.import_pi_session(RECORDED, session_id="imported")
        infos = {info.session_id: info for info in await store.list_sessions()}
    assert infos["waiting"].queued == 1 and infos["waiting"].entries == 0  # left as it was
    assert infos["imported"].pending is False  # no worker claims it: nothing to do


async def test_an_export_never_puts_a_file_where_a_folder_link_or_device_is(
    tmp_path: Path,
) -> None:
    folder, target, link = tmp_path / "folder", tmp_path / "target", tmp_path / "link"
    folder.mkdir()
    target.write_text("mine")
    link.symlink_to(target)
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        await _scripted_session(store, "s")
        for path in (folder, link):
            with pytest.raises(FileExistsError, match="is not a regular file"):
                await store.export_pi_session("s", path, overwrite=True)
        with pytest.raises(FileNotFoundError, match=r"cannot write beside .*nothing was written"):
            await store.export_pi_session("s", tmp_path / "missing" / "x.jsonl")
    assert folder.is_dir() and link.is_symlink() and target.read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["agents.db", "folder", "link", "target"]


async def test_an_import_refuses_what_is_not_a_regular_file_or_nests_too_deeply(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading it would block for ever
    deep = tmp_path / "deep.jsonl"
    header = RECORDED.read_text().splitlines()[0]
    nested = "[" * 100_000 + "]" * 100_000
    deep.write_text(f'{header}\n{{"type": "message", "id": "a", "message": {nested}}}\n')
    async with pt.open_session_store(tmp_path / "agents.db") as store:
        with pytest.raises(pt.PiSessionFileError, match="fifo: not a regular file"):
            await store.import_pi_session(fifo)
        descriptors = len(os.listdir("/proc/self/fd"))
        for _ in range(3):  # before: "Is a directory: 14", and the descriptor left open
            with pytest.raises(pt.PiSessionFileError, match=f"{tmp_path}: not a regular file"):
                await store.import_pi_session(tmp_path)
        assert len(os.listdir("/proc/self/fd")) == descriptors
        with pytest.raises(pt.PiSessionFileError, match="line 2: JSON nested too deeply"):
            await store.import_pi_session(deep)
        assert await store.list_sessions() == []
