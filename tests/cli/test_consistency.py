"""One rule per option across commands, and ``--model`` for servers that take any model id."""

from __future__ import annotations

import socket

import pytest

from pi_trio.cli import DELAY, PROXY_PORT, SERVE_PORT, build_parser, main
from pi_trio.cli._models import CliError, resolve_model


def test_every_server_has_a_default_port_and_takes_0() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve"]).port == SERVE_PORT
    assert parser.parse_args(["proxy"]).port == PROXY_PORT
    assert SERVE_PORT != PROXY_PORT  # both can run at once
    assert parser.parse_args(["serve", "--port", "0"]).port == 0


def test_every_command_has_the_same_delay_default() -> None:
    parser = build_parser()
    delays = {cmd: parser.parse_args([cmd]).delay for cmd in ("demo", "chat", "rpc", "serve")}
    assert delays == dict.fromkeys(delays, DELAY)


def test_proxy_without_a_token_names_the_option(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PI_TRIO_PROXY_TOKEN", raising=False)
    assert main(["proxy", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "pass --token TOKEN or set PI_TRIO_PROXY_TOKEN" in err and "token=" not in err


def test_a_local_server_takes_any_model_id_and_base_url_moves_it() -> None:
    model = resolve_model("ollama/qwen3:8b")
    assert (model.provider, model.id, model.api) == ("ollama", "qwen3:8b", "openai-completions")
    moved = resolve_model("ollama/qwen3:8b", "http://10.0.0.5:11434/v1/")
    assert moved.base_url == "http://10.0.0.5:11434/v1"
    with pytest.raises(CliError, match="--base-url wants an http"):
        resolve_model("ollama/qwen3:8b", "10.0.0.5:11434")


def test_a_provider_with_a_fixed_list_still_refuses_an_unknown_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with pytest.raises(CliError, match="claude-nope"):
        resolve_model("anthropic/claude-nope")


def test_base_url_with_the_scripted_model_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rpc", "--base-url", "http://127.0.0.1:1/v1"]) == 2
    assert "--base-url is for a real model" in capsys.readouterr().err


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.slow  # the demo in a CLI process
def test_demo_against_a_server_that_is_down_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(["demo", "--model", "ollama/qwen3:8b", "--base-url", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pi-trio: error: every request to ollama/qwen3:8b failed; the first: ")
