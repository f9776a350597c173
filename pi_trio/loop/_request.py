"""One provider request of a run: what the model sees, with which key, tools and options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, final

import attrs

from .._callbacks import call_maybe_async
from .._telemetry import RunTracing
from ..messages import AgentMessage, Context, Message, Tool
from ..models import Model
from ..providers import StreamOptions
from ..tools import AgentContext, AgentTool
from ._config import AgentLoopConfig, PrepareRequestContext
from ._transcript import Transcript, default_convert_to_llm

__all__ = ["Request", "TurnSetup", "build_request"]


def _tools_by_name(tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in tools}


def _specs(tools: Sequence[AgentTool]) -> tuple[Tool, ...]:
    return tuple(tool.spec for tool in tools)


@final
@attrs.define  # a record the run replaces, never changes (define: frozen's __init__ is dearer)
class TurnSetup:
    """What the run's next requests are made of: the context the hooks see (its system prompt
    and tools), the model and its options. A run starts from its config's and
    ``prepare_next_turn`` may replace any of them for later turns."""

    context: AgentContext
    model: Model
    options: StreamOptions
    tools: Mapping[str, AgentTool] = attrs.field(init=False, eq=False, repr=False)
    """The tools the model's calls run, by name."""
    tool_specs: tuple[Tool, ...] = attrs.field(init=False, eq=False, repr=False)
    """The tools each request offers."""

    @tools.default
    def _tools_default(self) -> Mapping[str, AgentTool]:
        return _tools_by_name(self.context.tools)

    @tool_specs.default
    def _tool_specs_default(self) -> tuple[Tool, ...]:
        return _specs(self.context.tools)


Request: TypeAlias = tuple[Model, Context, StreamOptions]
"""One request as it goes to the stream function: ``stream_fn(model, context, options)``."""


async def build_request(
    config: AgentLoopConfig,
    setup: TurnSetup,
    transcript: Transcript,
    tracing: RunTracing | None,
) -> Request:
    """What the run's next request sends, to which model, with which options.

    The model sees the ended messages (kept incrementally, or through ``transform_context``
    and ``convert_to_llm`` on a copy made for this request); ``get_api_key`` is asked right
    before it; ``prepare_request`` may replace the context, model or options. A checkpoint
    only when a hook awaits. Raises what a hook raised (the run turns it into the response's
    error).
    """
    llm = transcript.llm_view()
    if llm is None:
        llm = await _converted(config, list(transcript.messages))
    model = setup.model
    options = setup.options
    if config.get_api_key is not None:
        key = await call_maybe_async(config.get_api_key, model.provider)
        if key:
            options = attrs.evolve(options, api_key=key)
    context = Context(setup.context.system_prompt, llm, setup.tool_specs)
    if config.prepare_request is not None:
        update = await call_maybe_async(
            config.prepare_request, PrepareRequestContext(context, model, options)
        )
        if update is not None:
            context = update.context or context
            model = update.model or model
            options = update.options or options
    if tracing is not None:
        tracing.start_chat(model, context)
    return model, context, options


async def _converted(config: AgentLoopConfig, messages: list[AgentMessage]) -> Sequence[Message]:
    """The model's view through the application's hooks, given a copy of the transcript that
    is theirs to slice, filter or extend."""
    transformed: Sequence[AgentMessage] = messages
    if config.transform_context is not None:
        transformed = await call_maybe_async(config.transform_context, messages)
    if config.convert_to_llm is None:
        return default_convert_to_llm(transformed)
    converted: Sequence[Message] = await call_maybe_async(config.convert_to_llm, transformed)
    return converted
