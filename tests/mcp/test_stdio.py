"""pi_trio.mcp against a real MCP server (mcp's MCPServer, FastMCP's successor) over stdio."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

import pi_trio as pt

from .conftest import STDIO_ARGS, eventually, has_text, pid_alive

pytestmark = pytest.mark.slow  # a real MCP server process per test

LIMIT = 30  # seconds: real subprocesses, so a bound instead of a mock clock


def _stdio(tmp_path: Path, **options: object):  # type: ignore[no-untyped-def]
    env = {"PI_TRIO_TEST_PID_FILE": str(tmp_path / "pid")}
    return pt.mcp.open_stdio_server(sys.executable, STDIO_ARGS, env=env, **options)


def _pid(tmp_path: Path) -> int:
    return int((tmp_path / "pid").read_text())


def test_import_pi_trio_does_not_import_the_sdk() -> None:
    code = textwrap.dedent(
        """
        import sys
        import pi_trio as pt
        assert "mcp" not in sys.modules, "import pi_trio imported mcp"
        sys.modules["mcp"] = None  # as if the extra were not installed
        try:
            pt.mcp.open_stdio_server
        except ImportError as exc:
            assert "pi-trio[mcp]" in str(exc), exc
        else:
            raise AssertionError("no ImportError without the SDK")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_first_use_under_a_redirected_stderr_still_starts_servers() -> None:
    code = textwrap.dedent(
        f"""
        import contextlib, io, sys, trio
        import pi_trio as pt

        async def main():
            with contextlib.redirect_stderr(io.StringIO()):  # no file: the SDK imported now
                async with pt.mcp.open_stdio_server(sys.executable, {STDIO_ARGS!r}) as server:
                    print(len(await server.tools()))

        trio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 5


async def test_tools_map_schemas_and_results(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path) as server:
            tools = {tool.name: tool for tool in await server.tools(prefix="t")}
            add = tools["t_add"]
            assert add.description == "Add two integers."
            assert add.parameters["required"] == ["a", "b"]
            with pytest.raises(pt.ToolArgumentError):  # validated against the server's schema
                add.validate({"a": "x"})

            result = await add.execute("c1", {"a": 2, "b": 40}, None)
            assert result.details == {"structured_content": {"total": 42, "terms": [2, 40]}}

            image = await tools["t_image"].execute("c2", {}, None)
            assert image.content[0] == pt.TextContent("a red dot")
            assert isinstance(image.content[1], pt.ImageContent)
            assert image.content[1].mime_type == "image/png"

            with pytest.raises(pt.mcp.McpToolError, match="boom"):
                await tools["t_fail"].execute("c3", {"message": "boom"}, None)

            updates: list[pt.ToolResult] = []

            async def on_update(partial: pt.ToolResult) -> None:
                updates.append(partial)

            done = await tools["t_progress"].execute("c4", {"steps": 3}, on_update)
            assert done.content == [pt.TextContent("3 steps done")]
            assert [u.details["progress"] for u in updates] == [1, 2, 3]
            assert updates[0].content == [pt.TextContent("step 1 (1/3)")]


async def test_env_and_cwd_reach_the_child(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path, cwd=tmp_path) as server:
            answer = await server.call_tool("where", {"header": "x"})
            assert answer.content == [pt.TextContent(f"cwd={tmp_path} header=None")]
            assert _pid(tmp_path)  # the env's PI_TRIO_TEST_PID_FILE told it where to write


async def test_no_child_outlives_the_block(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path) as server:
            await server.call_tool("echo", {"text": "hi"})
            pid = _pid(tmp_path)
            assert pid_alive(pid)
        assert not pid_alive(pid)

        with trio.move_on_after(LIMIT / 3) as scope:  # left by a cancellation this time
            async with _stdio(tmp_path) as server:
                pid = _pid(tmp_path)
                scope.cancel()
                await server.call_tool("echo", {"text": "never sent"})
        assert scope.cancelled_caught
        assert not pid_alive(pid)


async def test_a_crash_mid_call_is_an_error_and_the_next_call_restarts(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path, name="crashy") as server:
            first = _pid(tmp_path)
            with pytest.raises(pt.mcp.McpServerError) as caught:
                await server.call_tool("crash")
            assert "MCP server 'crashy'" in str(caught.value)
            assert "exited" in str(caught.value)

            again = await server.call_tool("echo", {"text": "back"})
            assert again.content == [pt.TextContent("echo: back")]
            assert server.connections_opened == 2
            assert _pid(tmp_path) != first and not pid_alive(first)


async def test_a_child_that_died_while_idle_is_restarted_by_the_next_call(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path) as server:
            first = _pid(tmp_path)
            os.kill(first, signal.SIGKILL)
            await eventually(lambda: not pid_alive(first))  # reaped by the SDK's close
            answer = await server.call_tool("echo", {"text": "fresh"})
            assert answer.content == [pt.TextContent("echo: fresh")]
            assert server.connections_opened == 2


async def test_the_blocks_own_exception_comes_out_alone(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT), pytest.raises(KeyError):  # not an ExceptionGroup
        async with _stdio(tmp_path):
            raise KeyError("mine")
    assert not pid_alive(_pid(tmp_path))


async def test_the_blocks_own_exception_group_comes_out_as_it_was_raised(tmp_path: Path) -> None:
    async def failing_work() -> None:
        async def child() -> None:
            raise KeyError("mine")

        async with trio.open_nursery() as nursery:  # the caller's own nursery
            nursery.start_soon(child)

    with trio.fail_after(LIMIT), pytest.raises(ExceptionGroup) as caught:
        async with _stdio(tmp_path):
            await failing_work()
    assert [type(exc) for exc in caught.value.exceptions] == [KeyError]


async def test_a_timeout_cancels_the_call_on_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path, tool_timeouts={"hang": 0.5}) as server:
            tools = {tool.name: tool for tool in await server.tools()}
            with pytest.raises(pt.mcp.McpServerError, match=r"no answer within 0\.5 s"):
                await tools["hang"].execute("c1", {"marker": str(marker)}, None)
            await eventually(has_text(marker, "cancelled"))  # the server saw the cancellation
            echo = await tools["echo"].execute("c2", {"text": "still here"}, None)
            assert echo.content == [pt.TextContent("echo: still here")]
            assert server.connections_opened == 1


async def test_tools_list_changed_is_seen_by_the_next_listing(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with _stdio(tmp_path) as server:
            assert "extra" not in {tool.name for tool in await server.tools()}
            assert not server.tools_changed
            await server.call_tool("grow")
            await eventually(lambda: server.tools_changed)
            assert "extra" in {tool.name for tool in await server.tools()}
            assert not server.tools_changed


async def test_a_command_that_is_not_a_server_fails_clearly(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        with pytest.raises(pt.mcp.McpServerError, match="could not connect"):
            async with pt.mcp.open_stdio_server(
                sys.executable, ["-c", "print('not MCP')"], name="not-mcp"
            ):
                raise AssertionError("entered")
