"""The commands of pi-coding-agent 1.6's ``--mode rpc`` as ``pi-trio rpc`` carries them out.

:class:`PiCommands` holds one handler per command that belongs to an agent and its session;
:class:`pi_trio.cli._rpc.RpcSession` adds the transport, the prompt's task and the sessions.
A handler returns the response's ``data`` (``None``: a response without ``data``, as pi's) or
raises :class:`CommandError`, whose text becomes the error response. Commands of pi's coding
agent (``bash``, ``fork``, ``export_html``, ...) are answered by :data:`UNSUPPORTED`'s reasons.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from .._errors import WireFormatError
from ..agent import Agent
from ..compaction import Compaction
from ..messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..models import Model, get_env_api_key, list_models
from ..wire import from_json, to_json
from ._rpc_sessions import (
    SessionHost,
    entry_id,
    last_assistant_text,
    session_entries,
    session_stats,
)

__all__ = [
    "NULL_DATA",
    "UNSUPPORTED",
    "CommandError",
    "PiCommands",
    "check_calls_answered",
    "queue_texts",
    "text_of",
]

NULL_DATA: Any = object()
"""A handler's answer for a response whose ``data`` is ``null`` (pi writes it for a cycle with
nothing to cycle to); None leaves ``data`` out."""

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""pi 1.6's thinking levels, in order."""
QUEUE_MODES = ("all", "one-at-a-time")
_KEYLESS = ("ollama",)

_CODING_AGENT = "it belongs to pi's coding agent, which pi-trio is not"
UNSUPPORTED: dict[str, str] = {
    "bash": _CODING_AGENT,
    "abort_bash": _CODING_AGENT,
    "export_html": _CODING_AGENT,
    "get_commands": _CODING_AGENT + " (no extensions, prompt templates or skills)",
    "fork": "pi-trio sessions are one branch, not a tree",
    "clone": "pi-trio sessions are one branch, not a tree",
    "get_fork_messages": "pi-trio sessions are one branch, not a tree",
    "get_tree": "pi-trio sessions are one branch, not a tree; use get_entries",
    "set_auto_retry": "pi-trio retries inside its providers, not by re-running a turn",
    "abort_retry": "pi-trio retries inside its providers, not by re-running a turn",
    "set_session_name": "pi-trio sessions have an id, not a name",
}
"""pi's commands pi-trio answers with an error response, and why."""


class CommandError(Exception):
    """A command that cannot be carried out; its text goes into the error response."""


def text_of(message: AgentMessage) -> str:
    """A user message's text, as pi's queue shows it (its text blocks, joined)."""
    if not isinstance(message, UserMessage):
        return ""
    if isinstance(message.content, str):
        return message.content
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def queue_texts(agent: Agent) -> dict[str, list[str]]:
    """The agent's queues as pi's ``queue_update`` and ``clear_queue`` carry them."""
    queued = agent.queued()
    return {
        "steering": [text_of(q.message) for q in queued if q.kind == "steer"],
        "followUp": [text_of(q.message) for q in queued if q.kind == "follow_up"],
    }


def message_field(value: Any, field: str) -> str | AgentMessage:
    """A message field: plain text (pi's), or a message object in pi's JSON (pi-trio's)."""
    if isinstance(value, str):
        if not value.strip():
            raise CommandError(f"{field}: empty; send some text or a message object")
        return value
    if isinstance(value, dict):
        try:
            message: AgentMessage = from_json(value, AgentMessage)
        except WireFormatError as exc:
            raise CommandError(f"{field}: {exc}") from None
        if isinstance(message, UserMessage | ToolResultMessage) and not isinstance(
            message.content, str
        ):
            for i, block in enumerate(message.content):
                if isinstance(block, ImageContent):
                    _check_base64(block.data, f"{field}.content[{i}].data")
        return message
    raise CommandError(f"{field}: expected a string or a message object")


def check_calls_answered(messages: Sequence[str | AgentMessage], field: str) -> None:
    """Refuse a toolResult that answers no call: one of no assistant message right before it in
    the command (results follow their calls, before any other message), one answered already,
    or one of an aborted or failed assistant message (the request drops that message, so the
    result would go alone, and every later request is refused). A call left without a result
    is fine: the request gives it one ("No result provided"), as pi's does.

    Raises:
        CommandError: naming the result's call id.
    """
    calls: set[str] = set()  # the calls a result may still answer
    for message in messages:
        if isinstance(message, AssistantMessage):
            live = message.stop_reason not in ("aborted", "error")
            calls = {b.id for b in message.content if isinstance(b, ToolCall)} if live else set()
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id not in calls:
                raise CommandError(
                    f"{field}: a toolResult for {message.tool_call_id!r}, which no assistant "
                    "message right before it in this command calls, or one answered already (an "
                    "aborted or failed assistant message calls nothing)"
                )
            calls.discard(message.tool_call_id)
        else:  # a user message: the calls before it are closed (the request answers them)
            calls = set()


def images_field(raw: Any) -> list[ImageContent] | None:
    """``images``: pi's image objects with valid base64 data."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise CommandError("images: expected a list of image objects")
    images: list[ImageContent] = []
    for i, item in enumerate(raw):
        try:
            image: ImageContent = from_json(item, ImageContent)
        except WireFormatError as exc:
            raise CommandError(f"images[{i}]: {exc}") from None
        _check_base64(image.data, f"images[{i}].data")
        images.append(image)
    return images


def _check_base64(data: str, field: str) -> None:
    """Refuse image data a provider would refuse on every later request of the session."""
    try:
        base64.b64decode(data, validate=True)
    except ValueError:  # binascii.Error, or a text that is not ASCII
        raise CommandError(
            f"{field}: not valid base64 (standard alphabet, padded, no line breaks); send "
            "the image file's bytes base64-encoded"
        ) from None


def with_images(
    message: str | AgentMessage, images: list[ImageContent] | None
) -> str | AgentMessage:
    """A queued message: text and images as one user message (pi's shape for them)."""
    if not images:
        return message
    if not isinstance(message, str):
        raise CommandError("images: only with a text message")
    return UserMessage(content=[TextContent(text=message), *images])


def _choice(command: dict[str, Any], field: str, allowed: tuple[str, ...]) -> str:
    value = command.get(field)
    if value not in allowed:
        raise CommandError(f"{field}: expected one of {', '.join(allowed)}, got {value!r}")
    assert isinstance(value, str)
    return value


def thinking_levels(model: Model) -> list[str]:
    """The thinking levels pi offers for ``model``: "off" alone for a model without
    reasoning; else "off" to "high" (pi's "xhigh" and "max" need a per-model mapping that
    pi-trio's registry does not carry)."""
    return ["off"] if not model.reasoning else ["off", "minimal", "low", "medium", "high"]


def _clamp(level: str, available: list[str]) -> str:
    """pi's ``clampThinkingLevel``: the level, else the next one up, else the next one down."""
    if level in available:
        return level
    index = THINKING_LEVELS.index(level)
    for candidate in (*THINKING_LEVELS[index:], *reversed(THINKING_LEVELS[:index])):
        if candidate in available:
            return candidate
    return available[0]


class PiCommands:
    """pi's RPC command handlers over a :class:`SessionHost` (see the module's docstring)."""

    host: SessionHost

    @property
    def agent(self) -> Agent:
        return self.host.agent

    # provided by the session
    async def send(self, value: Any) -> None:
        raise NotImplementedError

    async def sync_queue(self) -> None:
        """Send pi's ``queue_update`` if the queues changed since the last one."""
        raise NotImplementedError

    @property
    def busy(self) -> bool:
        """True from the moment a prompt is accepted until its task has finished."""
        raise NotImplementedError

    async def stop_run(self, agent: Agent | None = None) -> None:
        """Abort the current prompt, if any (on ``agent``, by default the current one), and
        wait until it has settled."""
        raise NotImplementedError

    async def rebind(self, change: Callable[[], Awaitable[None]]) -> None:
        """Carry out ``change`` (a session change; refused, nothing changes), then stop the
        run and follow the new agent."""
        raise NotImplementedError

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]:
        return {
            "steer": self.steer,
            "follow_up": self.follow_up,
            "abort": self.abort,
            "clear_queue": self.clear_queue,
            "get_state": self.get_state,
            "get_messages": self.get_messages,
            "set_model": self.set_model,
            "cycle_model": self.cycle_model,
            "get_available_models": self.get_available_models,
            "set_thinking_level": self.set_thinking_level,
            "cycle_thinking_level": self.cycle_thinking_level,
            "get_available_thinking_levels": self.get_available_thinking_levels,
            "set_steering_mode": self.set_steering_mode,
            "set_follow_up_mode": self.set_follow_up_mode,
            "new_session": self.new_session,
            "switch_session": self.switch_session,
            "get_session_stats": self.get_session_stats,
            "get_entries": self.get_entries,
            "get_last_assistant_text": self.get_last_assistant_text,
            "compact": self.compact,
            "set_auto_compaction": self.set_auto_compaction,
        }

    # --- queues ----------------------------------------------------------------------------

    async def queue(self, command: dict[str, Any], kind: Literal["steer", "follow_up"]) -> Any:
        message = message_field(command.get("message"), "message")
        check_calls_answered([message], "message")
        queued = with_images(message, images_field(command.get("images")))
        if kind == "steer":
            self.agent.steer(queued)
        else:
            self.agent.follow_up(queued)
        await self.sync_queue()
        return {"disposition": "queued"}

    async def steer(self, command: dict[str, Any]) -> Any:
        return await self.queue(command, "steer")

    async def follow_up(self, command: dict[str, Any]) -> Any:
        return await self.queue(command, "follow_up")

    async def abort(self, command: dict[str, Any]) -> None:
        await self.stop_run()

    async def clear_queue(self, command: dict[str, Any]) -> Any:
        cleared = queue_texts(self.agent)
        self.agent.clear_all_queues()
        await self.sync_queue()
        return cleared

    # --- state -----------------------------------------------------------------------------

    async def get_state(self, command: dict[str, Any]) -> Any:
        state = self.agent.state
        return {
            "model": to_json(state.model),
            "thinkingLevel": state.thinking_level,
            "isStreaming": state.is_streaming,
            "isCompacting": False,
            "steeringMode": self.agent.steering_mode,
            "followUpMode": self.agent.follow_up_mode,
            "sessionId": self.host.session_id,
            "autoCompactionEnabled": self.agent.compaction is not None,
            "messageCount": len(state.messages),
            "pendingMessageCount": len(self.agent.queued()),
        }

    async def get_messages(self, command: dict[str, Any]) -> Any:
        return {"messages": [to_json(m) for m in self.agent.state.messages]}

    # --- models and thinking ---------------------------------------------------------------

    def available_models(self) -> list[Model]:
        """The registry's models this process can use, in registry order: the scripted one
        (when the agents run it), those whose provider's API key is set or that need none;
        the current model first when it is none of them (a ``--base-url`` model, say)."""
        current = self.agent.state.model
        models = []
        for model in list_models():
            if model.provider == "faux":
                usable = self.host.scripted_stream is not None
            else:
                usable = model.provider in _KEYLESS or get_env_api_key(model.provider) is not None
            if (model.provider, model.id) == (current.provider, current.id):
                models.append(current)
            elif usable:
                models.append(model)
        if current not in models:
            models.insert(0, current)
        return models

    async def use_model(self, model: Model) -> None:
        """Switch the agent to ``model``; a thinking level it does not take is lowered, and
        ``thinking_level_changed`` sent, as pi 1.6's ``setModel`` does."""
        self.agent.state.model = model
        self.agent.stream_fn = self.host.scripted_stream if model.provider == "faux" else None
        await self.set_level(self.agent.state.thinking_level)

    async def set_model(self, command: dict[str, Any]) -> Any:
        provider, model_id = command.get("provider"), command.get("modelId")
        if not isinstance(provider, str) or not isinstance(model_id, str):
            raise CommandError("provider and modelId: required strings (e.g. openai, gpt-4o)")
        for model in self.available_models():
            if (model.provider, model.id) == (provider, model_id):
                await self.use_model(model)
                return to_json(model)
        raise CommandError(
            f"Model not found: {provider}/{model_id} (get_available_models lists the models "
            "this process can use: the registry's, with their API key set)"
        )

    async def cycle_model(self, command: dict[str, Any]) -> Any:
        models = self.available_models()
        if len(models) < 2:
            return NULL_DATA
        await self.use_model(models[(models.index(self.agent.state.model) + 1) % len(models)])
        state = self.agent.state
        model = to_json(state.model)
        return {"model": model, "thinkingLevel": state.thinking_level, "isScoped": False}

    async def get_available_models(self, command: dict[str, Any]) -> Any:
        return {"models": [to_json(m) for m in self.available_models()]}

    async def set_level(self, level: str) -> None:
        state = self.agent.state
        effective = _clamp(level, thinking_levels(state.model))
        if effective != state.thinking_level:
            state.thinking_level = effective  # type: ignore[assignment]
            await self.send({"type": "thinking_level_changed", "level": effective})

    async def set_thinking_level(self, command: dict[str, Any]) -> None:
        await self.set_level(_choice(command, "level", THINKING_LEVELS))

    async def cycle_thinking_level(self, command: dict[str, Any]) -> Any:
        if not self.agent.state.model.reasoning:
            return NULL_DATA
        levels = thinking_levels(self.agent.state.model)
        current = self.agent.state.thinking_level
        index = levels.index(current) if current in levels else -1
        await self.set_level(levels[(index + 1) % len(levels)])
        return {"level": self.agent.state.thinking_level}

    async def get_available_thinking_levels(self, command: dict[str, Any]) -> Any:
        return {"levels": thinking_levels(self.agent.state.model)}

    async def set_steering_mode(self, command: dict[str, Any]) -> None:
        self.agent.steering_mode = _choice(command, "mode", QUEUE_MODES)  # type: ignore[assignment]

    async def set_follow_up_mode(self, command: dict[str, Any]) -> None:
        self.agent.follow_up_mode = _choice(command, "mode", QUEUE_MODES)  # type: ignore[assignment]

    # --- sessions --------------------------------------------------------------------------

    async def new_session(self, command: dict[str, Any]) -> Any:
        await self.rebind(self.host.new_session)
        return {"cancelled": False}

    async def switch_session(self, command: dict[str, Any]) -> Any:
        ref = command.get("sessionPath")
        if not isinstance(ref, str) or not ref:
            raise CommandError("sessionPath: required, a session id (get_state's sessionId)")
        if ref == self.host.session_id:  # already there: the run (if any) goes on
            return {"cancelled": False}

        async def switch() -> None:
            await self.host.switch_session(ref)

        await self.rebind(switch)
        return {"cancelled": False}

    async def get_session_stats(self, command: dict[str, Any]) -> Any:
        return session_stats(self.agent.state.messages, self.host.session_id)

    async def get_entries(self, command: dict[str, Any]) -> Any:
        entries = session_entries(self.agent.state.messages)
        since = command.get("since")
        if since is not None:
            ids = [entry["id"] for entry in entries]
            if since not in ids:
                raise CommandError(f"Entry not found: {since}")
            entries = entries[ids.index(since) + 1 :]
        count = len(self.agent.state.messages)
        return {"entries": entries, "leafId": entry_id(count - 1) if count else None}

    async def compact(self, command: dict[str, Any]) -> Any:
        """pi's ``compact``: summarise the older messages now (``agent.compact``); answered
        when the summary is in (other commands wait for it, ``abort`` included)."""
        instructions = command.get("customInstructions")
        if instructions is not None and not isinstance(instructions, str):
            raise CommandError(f"customInstructions: expected a string, got {instructions!r}")
        if self.busy or self.agent.state.is_streaming:  # busy: a prompt accepted, not started
            raise CommandError("Cannot compact while the agent is running; abort it first")
        summary = await self.agent.compact(instructions)
        if summary is None:
            raise CommandError("Nothing to compact (or the summary failed: see compaction_end)")
        return {
            "summary": summary.summary,
            "firstKeptEntryId": entry_id(1),  # the transcript is now [summary, *kept]
            "tokensBefore": summary.tokens_before,
        }

    async def set_auto_compaction(self, command: dict[str, Any]) -> None:
        """On: the agent compacts near its model's window (``pt.Compaction()`` unless it has
        settings already); off: never on its own."""
        enabled = command.get("enabled")
        if not isinstance(enabled, bool):
            raise CommandError(f"enabled: expected true or false, got {enabled!r}")
        if not enabled:
            self.agent.compaction = None
        elif self.agent.compaction is None:
            self.agent.compaction = Compaction()

    async def get_last_assistant_text(self, command: dict[str, Any]) -> Any:
        return {"text": last_assistant_text(self.agent.state.messages)}
