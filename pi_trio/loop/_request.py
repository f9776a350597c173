"""One provider request of a run: the transcript's model view, key, tools and hooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from .._callbacks import call_maybe_async
from ..messages import AgentMessage, AssistantMessage, Context, Message, Usage
from ..models import Model
from ..providers import StreamOptions
from ._config import PrepareRequestContext
from ._transcript import default_convert_to_llm

if TYPE_CHECKING:
    from ._run import _Run

__all__ = ["bare_message", "build_request", "build_request_now"]


def build_request_now(run: _Run) -> tuple[Context, StreamOptions, Model] | None:
    """:func:`build_request` without a coroutine, when no hook of the request is set (the
    usual case: the model sees the incremental view of the transcript); else None."""
    config = run.config
    if config.get_api_key is not None or config.prepare_request is not None:
        return None
    llm = run.transcript.llm_view()
    if llm is None:  # transform_context or convert_to_llm: build_request runs them
        return None
    model = run.model
    context = Context(run.context.system_prompt, llm, run.tool_specs)
    if run.tracing is not None:
        run.tracing.start_chat(model, context)
    return context, run.options, model


async def build_request(run: _Run) -> tuple[Context, StreamOptions, Model]:
    """What the run's next request sends, to which model, with which options.

    The model sees the ended messages (kept incrementally, or through ``transform_context``
    and ``convert_to_llm`` on a copy made for this request); ``get_api_key`` is asked right
    before it; ``prepare_request`` may replace the context, model or options. Raises what a
    hook raised (the caller turns it into the response's error).
    """
    config = run.config
    llm = run.transcript.llm_view()
    if llm is None:
        # the hooks get their own copy of the transcript: theirs to slice, filter or extend
        messages: Sequence[AgentMessage] = list(run.transcript.messages)
        if config.transform_context is not None:
            messages = await call_maybe_async(config.transform_context, messages)
        if config.convert_to_llm is not None:
            converted: Sequence[Message] = await call_maybe_async(config.convert_to_llm, messages)
            llm = converted
        else:
            llm = default_convert_to_llm(messages)
    options = run.options
    model = run.model
    if config.get_api_key is not None:
        key = await call_maybe_async(config.get_api_key, model.provider)
        if key:
            options = attrs.evolve(options, api_key=key)
    context = Context(run.context.system_prompt, llm, run.tool_specs)
    if config.prepare_request is not None:
        update = await call_maybe_async(
            config.prepare_request, PrepareRequestContext(context, model, options)
        )
        if update is not None:
            context = update.context or context
            model = update.model or model
            options = update.options or options
    if run.tracing is not None:
        run.tracing.start_chat(model, context)
    return context, options, model


def bare_message(model: Model, reason: Literal["error", "aborted"], text: str) -> AssistantMessage:
    """pi's shape of a response that failed before (or without) any content."""
    return AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason=reason,
        error_message=text,
    )
