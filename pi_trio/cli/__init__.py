"""The ``pi-trio`` command: ``demo``, ``chat``, ``rpc``, ``serve``, ``proxy``, ``stress``,
``sessions`` and ``worker``.

``main(argv)`` parses the arguments, runs the command under ``trio.run`` and returns the exit
status; usage problems (an unknown model, a missing API key) are one line on stderr and
status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import trio

from .._version import __version__
from ._approvals import add_approve_option
from ._interrupt import INTERRUPTED, run_interruptible
from ._models import SCRIPTED, CliError, resolve_model
from ._render import OutputGone
from ._sessions import add_session_options, add_sessions_parser

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["CliError", "build_parser", "main"]


DELAY = 0.02
"""Default ``--delay`` of every command (seconds per streamed word of the scripted model)."""
SERVE_PORT = 8765
PROXY_PORT = 8787
"""Default ports: every server command has one, and ``--port 0`` picks any free port."""


def _delay(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 <= seconds <= 10:
        raise argparse.ArgumentTypeError("must be between 0 and 10 seconds")
    return seconds


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError("must be between 0 and 65535")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi-trio",
        description="A Trio-native agent loop (pi's agent core). Start with: pi-trio demo",
    )
    parser.add_argument("--version", action="version", version=f"pi-trio {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def model_options(sub: argparse.ArgumentParser, default: str | None, delay: float) -> None:
        sub.add_argument(
            "--model",
            default=default,
            metavar="PROVIDER/ID",
            help=f"a registry model such as anthropic/claude-sonnet-4-5 (its API key must be set "
            f"in the environment), or {SCRIPTED!r} for the scripted model (default: "
            f"{default or 'the scripted demo model'})",
        )
        sub.add_argument(
            "--delay",
            type=_delay,
            default=delay,
            metavar="SECONDS",
            help=f"scripted model only: pause before each streamed word (default {delay})",
        )
        sub.add_argument(
            "--base-url",
            metavar="URL",
            help="the model's server instead of its provider's (e.g. http://host:11434/v1)",
        )

    demo = commands.add_parser(
        "demo", help="a short scripted session: streaming, parallel tools, steering, abort"
    )
    model_options(demo, None, DELAY)

    chat = commands.add_parser("chat", help="an interactive chat with example tools")
    model_options(chat, None, DELAY)
    chat.add_argument("--system", metavar="PROMPT", help="the system prompt")
    chat.add_argument(
        "--mcp", action="append", default=[], metavar="'CMD ARGS'",
        help="an MCP server to start over stdio; its tools join the chat (repeatable)",
    )  # fmt: skip
    chat.add_argument(
        "--mcp-url", action="append", default=[], metavar="URL",
        help="a streamable-HTTP MCP server whose tools join the chat (repeatable)",
    )  # fmt: skip
    add_session_options(chat)
    add_approve_option(chat)

    rpc = commands.add_parser(
        "rpc",
        help="drive an agent with pi's RPC protocol (pi 1.6's --mode rpc) on stdin/stdout",
        description="pi-coding-agent 1.6's --mode rpc protocol on stdin/stdout (docs/rpc.md). "
        "Sessions live in memory unless --store or --session is given; then they are durable "
        "sessions of the store and switch_session takes a session id.",
    )
    model_options(rpc, None, DELAY)
    add_session_options(rpc, in_memory=True)
    add_approve_option(rpc)
    rpc.add_argument(
        "--mode", choices=["rpc"], help="accepted and ignored (pi's RpcClient passes it)"
    )

    serve = commands.add_parser(
        "serve", help="pi's RPC protocol over TCP, in-memory sessions per connection"
    )
    model_options(serve, None, DELAY)
    add_approve_option(serve)
    serve.add_argument(
        "--port", type=_port, default=SERVE_PORT,
        help=f"TCP port (default {SERVE_PORT}; 0: any free port)",
    )  # fmt: skip
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )

    proxy = commands.add_parser(
        "proxy", help="a model proxy holding the provider keys (pi's streamProxy protocol)"
    )
    proxy.add_argument(
        "--port", type=_port, default=PROXY_PORT,
        help=f"TCP port (default {PROXY_PORT}; 0: any free port)",
    )  # fmt: skip
    proxy.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    proxy.add_argument(
        "--token",
        help="bearer token clients must send (default: $PI_TRIO_PROXY_TOKEN; one is required)",
    )
    proxy.add_argument(
        "--model", action="append", default=[], metavar="PROVIDER/ID",
        help="serve exactly this model (repeatable; any id for providers that take any, such "
        "as ollama/qwen3:8b); default: every model of the built-in registry",
    )  # fmt: skip
    proxy.add_argument(
        "--base-url", help="the server of the --model models (a local Ollama elsewhere, say)"
    )
    from ._stress import add_parser as add_stress_parser

    add_stress_parser(commands)
    add_sessions_parser(commands)
    from ._worker import add_worker_parser

    add_worker_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pi-trio`` command line; returns the process exit status.

    Ctrl-C ends every command the same way: a run in progress is aborted (its transcript
    closed in pi's aborted shape), one line goes to stderr (``chat`` says bye on its output
    instead), and the status is 130.
    """
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        return _dispatch(args)
    except CliError as exc:
        print(f"pi-trio: error: {exc}", file=sys.stderr)
        return 2
    except (BrokenPipeError, OutputGone):  # the reader of stdout went away (| head)
        _silence_stdout()
        return 0
    except BaseExceptionGroup as group:  # the same, from a command's own nursery
        if group.split((BrokenPipeError, OutputGone))[1] is not None:
            raise
        _silence_stdout()
        return 0
    except KeyboardInterrupt:  # before the command's own SIGINT handling is in place
        print("pi-trio: interrupted", file=sys.stderr)
        return INTERRUPTED


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not hit the broken pipe
    again ("Exception ignored ... BrokenPipeError" at exit)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _dispatch(args: argparse.Namespace) -> int:
    from ._agents import SYSTEM_PROMPT, agent_factory
    from ._approvals import with_approvals

    if args.command == "proxy":
        return _proxy(args.host, args.port, args.token, args.model, args.base_url)
    if args.command == "stress":
        from ._stress import run_command

        return run_command(args)
    if args.command == "sessions":
        from ._sessions import run_sessions

        return run_sessions(args)
    if args.command == "worker":
        from ._worker import run_worker

        return run_worker(args)

    if args.command == "demo":
        from ._demo import run_demo

        if args.model in (None, SCRIPTED) and args.base_url is not None:
            raise CliError("--base-url is for a real model (--model provider/id)")
        model = None if args.model in (None, SCRIPTED) else resolve_model(args.model, args.base_url)
        result = run_interruptible(lambda: run_demo(model=model, token_delay=args.delay))
        if isinstance(result, int):
            return result
        if result.every_request_failed:
            print(
                f"pi-trio: error: every request to {result.model} failed; the first: "
                f"{result.model_errors[0][:300]}",
                file=sys.stderr,
            )
            return 1
        return 0 if not result.problems else 1

    make_agent = agent_factory(
        args.model or SCRIPTED,
        token_delay=args.delay,
        system_prompt=getattr(args, "system", None) or SYSTEM_PROMPT,
        base_url=args.base_url,
    )
    approve = frozenset(getattr(args, "approve", ()))
    make_agent = with_approvals(make_agent, approve)
    if args.command == "chat":
        if args.session:
            from ._sessions import run_durable

            return run_durable(
                args, make_agent, lambda factory: _chat(factory, args.mcp, args.mcp_url, approve)
            )
        return run_interruptible(lambda: _chat(make_agent, args.mcp, args.mcp_url, approve))
    if args.command == "rpc":
        return _rpc(make_agent, args.store, args.session, model_given=args.model is not None)
    if args.command == "serve":
        return run_interruptible(lambda: _serve(make_agent, args.host, args.port))
    raise AssertionError(args.command)


def _proxy(host: str, port: int, token: str | None, models: list[str], base_url: str | None) -> int:
    import os

    from .._errors import PiError
    from ..proxy import TOKEN_ENV_VAR, ProxyServer

    token = token or os.environ.get(TOKEN_ENV_VAR, "")
    if not token:
        raise CliError(
            f"the proxy needs a bearer token for its clients: pass --token TOKEN "
            f"or set {TOKEN_ENV_VAR}"
        )
    if base_url is not None and not models:
        raise CliError("--base-url goes with --model: name the models that server answers for")
    if SCRIPTED in models:
        raise CliError(
            f"the proxy serves real models; {SCRIPTED!r} is the scripted model of demo and chat: "
            "give --model provider/id (e.g. ollama/qwen3:8b)"
        )
    served = [resolve_model(spec, base_url) for spec in models] or None
    try:
        server = ProxyServer(token=token, host=host, port=port, models=served)
    except PiError as exc:
        raise CliError(str(exc)) from None

    async def serve() -> int:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve)
            print(f"listening on {url}", flush=True)
        return 0

    return run_interruptible(serve)


async def _chat(
    make_agent: Callable[[], Agent], mcp: list[str], mcp_urls: list[str], approve: frozenset[str]
) -> int:
    from ._chat import ChatSession

    agent = make_agent()
    if not mcp and not mcp_urls:
        return await ChatSession(agent, approve_tools=approve).run()
    from ._mcp import open_mcp_tools

    async with open_mcp_tools(agent, mcp, mcp_urls) as refresh:
        return await ChatSession(agent, before_prompt=refresh, approve_tools=approve).run()


def _rpc(
    make_agent: Callable[[], Agent], store: str | None, session: str | None, *, model_given: bool
) -> int:
    from .._errors import PiError
    from ._rpc import run_stdio
    from ._sessions import DEFAULT_STORE

    if session is not None and store is None:
        store = DEFAULT_STORE
    try:
        status = run_interruptible(
            lambda: run_stdio(make_agent, store=store, session_id=session, model_given=model_given)
        )
    except PiError as exc:
        raise CliError(str(exc)) from None
    return status or 0


async def _serve(make_agent: Callable[[], Agent], host: str, port: int) -> int:
    from ._rpc import serve_tcp_rpc

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(serve_tcp_rpc, make_agent, port, host)
        for listener in listeners:
            address = listener.socket.getsockname()
            print(f"listening on {address[0]}:{address[1]}", flush=True)
        # What is loaded by now (modules, the model, the listeners) lives as long as the
        # server: out of the collector's way, so a full collection with many connections
        # walks only their agents (docs/benchmarks.md, "Many agents in one process").
        gc.freeze()
    return 0
