"""The commands as a user runs them: subprocesses with piped stdio (and SIGINT for chat)."""

from __future__ import annotations

import signal
import sys

import pytest

import pi_trio as pt
from pi_trio.cli import main

from ._helpers import NOT_AGENT_EVENTS, Process


@pytest.mark.slow  # the demo in a CLI process
def test_demo_runs_piped_without_terminal_codes_and_exits_0() -> None:
    proc = Process("demo", "--delay", "0.004")
    code = proc.close(timeout=30)
    text = proc.text
    assert code == 0, text + proc.proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "\x1b" not in text
    for line in (
        "pi_trio demo on faux/faux-1",
        "-> get_weather",
        "another task calls agent.steer(",
        "> Keep it to one short line per city, please.",
        "> Which of the three is warmest?",
        "3 tool calls ran in parallel",
        "[aborted: Request was aborted]",
        "[demo] transcript valid",
        "== summary ==",
    ):
        assert line in text, line


def test_rpc_over_stdio_prompt_abort_and_malformed_lines() -> None:
    proc = Process("rpc", "--delay", "0.005")
    try:
        proc.write('{"type": "prompt", "message": "what is 1 + 1?", "id": 1}\n')
        proc.expect('"type":"agent_settled"')
        proc.write("this is not json\n")
        proc.write('{"type": "prompt", "message": "tell me a long story", "id": 2}\n')
        proc.expect('"delta":"Sentence "')
        proc.write('{"type": "abort", "id": 3}\n')
        proc.expect('{"id":3,"type":"response","command":"abort","success":true}')
        proc.write('{"type": "get_messages", "id": 4}\n')
        proc.expect('"id":4')
    finally:
        code = proc.close()
    assert code == 0
    lines = proc.json_lines()
    for item in lines:
        if item["type"] not in NOT_AGENT_EVENTS:
            pt.from_json(item, pt.AgentEvent)
    replies = {item.get("id"): item for item in lines if item["type"] == "response"}
    assert replies[None]["command"] == "parse" and replies[None]["success"] is False
    assert replies[None]["error"].startswith("Failed to parse command: ")
    messages = replies[4]["data"]["messages"]
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    assert messages[-1]["stopReason"] == "aborted"


@pytest.mark.slow  # a chat process, interrupted
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_chat_ctrl_c_aborts_the_run_then_exits_at_the_prompt() -> None:
    proc = Process("chat", "--delay", "0.02")
    try:
        proc.expect("you> ")
        proc.write("tell me a long story\n")
        at = proc.expect("Sentence 2")
        proc.proc.send_signal(signal.SIGINT)
        at = proc.expect("[aborted: Request was aborted]", start=at)
        at = proc.expect("you> ", start=at)
        proc.write("what is 2 + 3 * 4?\n")
        at = proc.expect("The calculate tool says: 14", start=at)
        at = proc.expect("you> ", start=at)
        proc.proc.send_signal(signal.SIGINT)
        proc.expect("[Ctrl-C: bye]", start=at)
    finally:
        code = proc.close()
    assert code == 130


def test_chat_with_piped_input_ends_at_eof() -> None:
    proc = Process("chat", "--delay", "0")
    proc.write("what time is it?\n")
    code = proc.close()
    assert code == 0
    assert "-> clock({})" in proc.text and "[end of input: bye]" in proc.text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--model", "openai/gpt-5-mini"], "needs an API key: set OPENAI_API_KEY"),
        (["chat", "--model", "nobody/none"], "unknown provider 'nobody'"),
        (["rpc", "--model", "gpt-5"], "--model wants provider/id"),
    ],
)
def test_a_bad_model_is_one_clear_line_and_status_2(
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("pi-trio: error: ") and message in err
    assert err.count("\n") == 1


def test_help_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "chat", "rpc", "serve"):
        assert command in out


def test_proxy_needs_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PI_TRIO_PROXY_TOKEN", raising=False)
    assert main(["proxy", "--port", "0"]) == 2
    assert "token" in capsys.readouterr().err


def test_proxy_command_listens_on_localhost() -> None:
    proc = Process("proxy", "--port", "0", "--token", "secret")
    try:
        proc.expect("listening on http://127.0.0.1:")
    finally:
        proc.proc.terminate()
        proc.close()


@pytest.mark.slow  # proxy processes
@pytest.mark.trio
async def test_proxy_serves_the_models_it_is_given_registry_or_not() -> None:
    # an Ollama model the registry does not list, on a server that is down: the proxy accepts
    # the model (the failure is the upstream connection), and refuses one it was not given
    proc = Process(
        "proxy", "--port", "0", "--token", "secret",
        "--model", "ollama/qwen3:8b", "--base-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    try:
        end = proc.expect("listening on http://127.0.0.1:")
        url = "http://127.0.0.1:" + proc.text[end:].split()[0].rstrip("/")
        errors = []
        for model_id in ("qwen3:8b", "llama3.2"):
            model = pt.Model(
                id=model_id, name=model_id, api="openai-completions", provider="ollama",
                base_url="http://elsewhere", input=("text",), cost=pt.ModelCost(),
                context_window=8192, max_tokens=1024,
            )  # fmt: skip
            agent = pt.Agent(pt.AgentState(model=model), stream_fn=pt.stream_proxy(url, "secret"))
            await agent.prompt("hi")
            errors.append(agent.state.error_message or "")
        assert "400" not in errors[0] and "127.0.0.1:9" in errors[0], errors[0]  # upstream down
        assert "ollama/llama3.2 is not served here; served: ollama/qwen3:8b" in errors[1]
    finally:
        proc.proc.terminate()
        proc.close()


def test_proxy_base_url_needs_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["proxy", "--token", "t", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "--base-url goes with --model" in capsys.readouterr().err


def test_proxy_model_error_does_not_offer_what_it_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["proxy", "--token", "t", "--port", "0", "--model", "faux"])
    err = capsys.readouterr().err
    assert not ("or 'faux'" in err and "got 'faux'" in err), err
