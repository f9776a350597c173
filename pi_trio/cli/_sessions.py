"""``pi-trio sessions list | show ID | export ID | import FILE``: look into a session store.

``list`` prints one line per session; ``show`` prints a session's log, one entry per line;
``export`` writes the log as JSON lines (one :meth:`SessionEntry.to_json` object per line), for
inspection or for another tool, or with ``--format pi`` the session as a pi 1.6 session file;
``import`` makes a session of a pi 1.6 session file (the only one that writes to the store).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO

import trio

from .._errors import PiError
from ._agents import resume_with_model
from ._models import CliError

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = [
    "DEFAULT_STORE",
    "add_session_options",
    "add_sessions_parser",
    "run_durable",
    "run_sessions",
]

DEFAULT_STORE = "pi-trio-sessions.db"


def _store_option(parser: argparse.ArgumentParser, *, fallback: str | None = DEFAULT_STORE) -> None:
    default = os.environ.get("PI_TRIO_STORE", fallback)
    otherwise = f"./{fallback}" if fallback else "sessions in memory, unless --session is given"
    parser.add_argument(
        "--store",
        default=default,
        metavar="PATH",
        help=f"the session store (default: $PI_TRIO_STORE, else {otherwise})",
    )


def add_session_options(parser: argparse.ArgumentParser, *, in_memory: bool = False) -> None:
    """``--session ID`` (and ``--store PATH``) for ``chat`` and ``rpc``; ``in_memory``: no
    store unless one is named (``args.store`` is None then; ``--session`` implies
    :data:`DEFAULT_STORE`)."""
    parser.add_argument(
        "--session",
        metavar="ID",
        help="keep the conversation in a durable session: created, or resumed from its log",
    )
    _store_option(parser, fallback=None if in_memory else DEFAULT_STORE)


def run_durable(
    args: argparse.Namespace,
    make_agent: Callable[[], Agent],
    command: Callable[[Callable[[], Agent]], Awaitable[int | None]],
) -> int:
    """Run ``command`` on the agent of session ``args.session`` in ``args.store``.

    The command's usual agent gives the tools, model and stream function; a resumed session
    keeps its logged transcript, queues, model, system prompt and thinking level.
    """

    async def durable() -> int:
        from ..sessions import open_session_store

        template = make_agent()
        async with (
            open_session_store(args.store) as store,
            store.open_agent(
                args.session, initial_state=template.state, stream_fn=template.stream_fn
            ) as agent,
        ):
            resume_with_model(agent, template, model_given=args.model is not None)
            status = await command(lambda: agent)
        return status or 0

    from ._interrupt import run_interruptible

    try:
        return run_interruptible(durable)
    except PiError as exc:
        if isinstance(exc, CliError):
            raise
        raise CliError(str(exc)) from None


def add_sessions_parser(commands: Any) -> None:
    """Register the ``sessions`` command on the ``pi-trio`` subparsers."""
    sessions = commands.add_parser(
        "sessions", help="list, show or export durable sessions; decide about waiting tool calls"
    )
    _store_option(sessions)
    actions = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="one line per session")
    show = actions.add_parser("show", help="a session's log, one entry per line")
    show.add_argument("session_id", metavar="ID")
    export = actions.add_parser(
        "export", help="a session's log as JSON lines, or (--format pi) a pi session file"
    )
    export.add_argument("session_id", metavar="ID")
    export.add_argument(
        "--format",
        choices=("log", "pi"),
        default="log",
        help="log: the log's entries as JSON lines (default); pi: a pi 1.6 session file",
    )
    export.add_argument(
        "-o", "--output", metavar="FILE", help="with --format pi: write it there (default: stdout)"
    )
    export.add_argument(
        "--overwrite", action="store_true", help="replace FILE if it exists (never by default)"
    )
    imported = actions.add_parser(
        "import", help="make a session of a pi 1.6 session file (its current branch)"
    )
    imported.add_argument("file", metavar="FILE")
    imported.add_argument("--id", metavar="ID", help="the session's id (default: the file's own)")
    pending = actions.add_parser("pending", help="the tool calls that wait for a decision")
    pending.add_argument("session_id", metavar="ID", nargs="?", help="only this session's")
    for name, what in (("approve", "run it"), ("deny", "refuse it")):
        decide = actions.add_parser(name, help=f"decide about a tool call that waits: {what}")
        decide.add_argument("session_id", metavar="ID")
        decide.add_argument("call_id", metavar="CALL")
        if name == "deny":
            decide.add_argument("--reason", default="", help="why (the model reads it)")


def _when(ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _text_of(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        if isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "toolCall":
                parts.append(f"[{block.get('name')}({json.dumps(block.get('arguments'))})]")
    return " ".join(parts)


def _summary(kind: str, data: Any) -> str:
    if kind == "message":
        extra = data.get("stopReason") or data.get("toolName") or ""
        return f"{data.get('role')} {extra} {_text_of(data)}".replace("\n", " ")
    if kind == "queued":
        return f"{data.get('queue')}: {_text_of(data.get('message'))}"
    if kind in ("tool_intent", "tool_result", "approval"):
        return f"{data.get('toolName')} {data.get('toolCallId')}"
    if kind == "decision":
        verdict = "approved" if data.get("approved") else f"denied {data.get('reason', '')}"
        return f"{data.get('toolCallId')} {verdict}"
    if kind == "state":
        model = data.get("model") or {}
        return f"{model.get('provider')}/{model.get('id')} thinking={data.get('thinkingLevel')}"
    if kind == "transcript":
        return f"{len(data.get('messages', []))} messages"
    if kind == "compaction":
        summary = str(data.get("summary", "")).replace("\n", " ")
        return (
            f"COMPACTED: {data.get('firstKept')} earlier messages ({data.get('tokensBefore')} "
            f"tokens) summarised, {data.get('keptCount')} kept: {summary}"
        )
    return json.dumps(data)


async def _run(args: argparse.Namespace, out: TextIO) -> int:
    from ..sessions import open_session_store

    async with open_session_store(args.store) as store:
        if args.action == "list":
            for info in await store.list_sessions():
                holder = info.holder or "-"
                queued = f"\t{info.queued} queued" if info.queued else ""
                if info.set_aside:
                    queued += ", SET ASIDE: it failed (new input retries it)"
                print(
                    f"{info.session_id}\t{info.entries} entries\tupdated {_when(info.updated)}"
                    f"\tepoch {info.epoch}\theld by {holder}{queued}",
                    file=out,
                )
            return 0
        if args.action in ("pending", "approve", "deny"):
            await _approvals(store, args, out)
            return 0
        if args.action == "import":
            session_id = await store.import_pi_session(args.file, session_id=args.id)
            print(f"imported {args.file} as session {session_id}", file=out)
            return 0
        if args.action == "export" and args.format == "pi":
            await _export_pi(store, args, out)
            return 0
        entries = await store.load(args.session_id)
        if not entries:
            raise CliError(f"no session {args.session_id!r} in {args.store}")
        for entry in entries:
            if args.action == "export":
                print(json.dumps(entry.to_json(), ensure_ascii=False), file=out)
            else:
                line = _summary(entry.kind, entry.data)
                print(
                    f"{entry.seq:>6}  {_when(entry.time)}  e{entry.epoch}  {entry.kind:<11}  "
                    f"{line[:120]}",
                    file=out,
                )
    return 0


async def _approvals(store: Any, args: argparse.Namespace, out: TextIO) -> None:
    """``pending``: one line per waiting call; ``approve``/``deny``: a decision (the session's
    holder, or its next one, continues once every waiting call is decided)."""
    try:
        if args.action == "pending":
            for session_id, call in await store.pending_approvals(args.session_id):
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                print(f"{session_id}\t{call.id}\t{call.name}({arguments})", file=out)
            return
        if args.action == "approve":
            await store.approve(args.session_id, args.call_id)
        else:
            await store.deny(args.session_id, args.call_id, args.reason)
    except KeyError as exc:
        raise CliError(str(exc.args[0])) from None
    except ValueError as exc:  # a session id the store refuses ("")
        raise CliError(str(exc)) from None
    verb = "approved" if args.action == "approve" else "denied"
    print(f"{verb} {args.call_id} in session {args.session_id}", file=out)


async def _export_pi(store: Any, args: argparse.Namespace, out: TextIO) -> None:
    if args.output is not None:
        await store.export_pi_session(args.session_id, args.output, overwrite=args.overwrite)
        print(f"exported session {args.session_id} to {args.output}", file=out)
        return
    with tempfile.TemporaryDirectory() as folder:  # the file, then its text to stdout
        path = os.path.join(folder, "session.jsonl")
        await store.export_pi_session(args.session_id, path)
        with open(path, encoding="utf-8") as file:  # noqa: ASYNC230 (a small file)
            out.write(file.read())


def run_sessions(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``pi-trio sessions ...``; store and file problems become one-line errors
    (status 2). Only ``import`` may create the store file."""
    creates = args.action == "import"
    if "://" not in args.store and not creates and not os.path.exists(args.store):
        raise CliError(f"no session store at {args.store} (pass --store PATH)")
    try:
        return trio.run(_run, args, out or sys.stdout)
    except PiError as exc:
        if isinstance(exc, CliError):
            raise
        raise CliError(str(exc)) from None
    except OSError as exc:  # the file to import or export to
        if isinstance(exc, BrokenPipeError):  # stdout went away (| head): main ends quietly
            raise
        what = str(exc) if exc.filename is None else f"{exc.strerror}: {exc.filename}"
        raise CliError(what) from None
