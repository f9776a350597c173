"""Compacting a run's transcript: summarise its older part with the model, keep its tail.

:class:`Compactor` does it for one run (or for ``agent.compact()``, :func:`compact_context`):
``compaction_start``; one summary request through the run's stream function, with no tools;
then, only if a summary came back, the transcript (the caller's live list: the agent's
``state.messages``) becomes ``[CompactionSummary, *system messages, *kept tail]`` and
``compaction_end`` says so. A summary at the head is handed to the summariser to update, never
stacked under a new one. System messages are never cut off: they make the prompt and the tools
(:mod:`pi_trio.system_messages`), so those before the cut stay, in order, after the summary.

Cancellation (an abort, a deadline) during the summary request leaves the transcript exactly as
it was: it is replaced in one synchronous step after the summary arrived. The
``compaction_end`` that says it was aborted is applied then, and delivered first in the run's
close-out. A summary request that fails leaves the transcript as it was too, and
``compaction_end`` carries the error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

import attrs
import trio

from .._callbacks import call_maybe_async, exception_text
from ..coding_messages import CompactionSummary
from ..compaction import (
    SUMMARY_SYSTEM_PROMPT,
    Compaction,
    context_tokens,
    find_cut,
    is_context_overflow,
    summary_prompt,
)
from ..events import CompactionEnd, CompactionReason, CompactionStart, StreamDone, StreamError
from ..messages import (
    AgentMessage,
    AssistantMessage,
    Context,
    Message,
    SystemMessage,
    TextContent,
    UserMessage,
)
from ..models import Model
from ..providers import StreamFn, StreamOptions, stream_simple
from ..tools import AgentContext
from ._config import AgentLoopConfig
from ._emit import Emitter
from ._sink import EventSink
from ._transcript import Transcript, default_convert_to_llm

__all__ = ["Compactor", "compact_context"]


class Compactor:
    """The compaction of one run's transcript.

    Args:
        settings: when and how to compact.
        config: the run's configuration (its stream function and ``get_api_key``).
        emitter: applies and delivers the compaction events, and owns the transcript.
    """

    __slots__ = ("config", "emitter", "settings", "stream_fn")

    def __init__(self, settings: Compaction, config: AgentLoopConfig, emitter: Emitter) -> None:
        self.settings = settings
        self.config = config
        self.emitter = emitter
        self.stream_fn: StreamFn = config.stream_fn or stream_simple

    def due(self, model: Model) -> bool:
        """Whether the next request's context exceeds ``model.context_window -
        reserve_tokens`` (never for a model whose window is unknown, 0)."""
        window = model.context_window
        if window <= 0:
            return False
        return (
            context_tokens(self.emitter.transcript.messages) > window - self.settings.reserve_tokens
        )

    def overflowed(self, message: AssistantMessage, model: Model) -> bool:
        """Whether ``message`` failed because its request did not fit the window."""
        return message.stop_reason == "error" and is_context_overflow(message, model.context_window)

    async def compact(
        self,
        reason: CompactionReason,
        model: Model,
        options: StreamOptions,
        *,
        instructions: str | None = None,
    ) -> CompactionSummary | None:
        """Compact the transcript now; the new summary, or None when nothing could be cut off
        or the summary failed (``compaction_end`` says why). After an "overflow", the failed
        response at the end is left out of what is kept (it stays in the run's new messages
        and a session's log) and ``will_retry`` is set when a summary was made.

        On cancellation the transcript is unchanged, the aborted ``compaction_end`` is applied
        (delivered by the close-out) and ``Cancelled`` propagates.
        """
        transcript = self.emitter.transcript
        plan = _Plan.of(transcript.messages, reason, self.settings.keep_recent_tokens)
        if plan.cut == 0 and reason != "manual":
            return None
        summary: CompactionSummary | None = None
        text = usage = error = None
        try:  # from the start event on: an end follows it, aborted if need be
            await self._emit(CompactionStart(reason))
            if plan.cut:
                text, usage, error = await self._summarise(
                    plan.older(), plan.previous, model, options, instructions
                )
        except BaseException:
            aborted = CompactionEnd(None, plan.tokens_before, reason=reason, aborted=True)
            self.emitter.defer(aborted)
            raise
        if plan.cut and text is not None:
            summary = CompactionSummary(text, plan.tokens_before)
            transcript.replace([summary, *plan.kept(transcript.messages)])
        await self._emit(
            CompactionEnd(
                text,
                plan.tokens_before,
                error,
                reason=reason,
                will_retry=reason == "overflow" and summary is not None,
                first_kept=plan.cut if summary is not None else None,
                kept_system=plan.kept_system if summary is not None else (),
                kept_count=len(plan.messages) - plan.cut if summary is not None else None,
                usage=usage,
            )
        )
        return summary

    async def _summarise(
        self,
        messages: list[AgentMessage],
        previous: str | None,
        model: Model,
        options: StreamOptions,
        instructions: str | None,
    ) -> tuple[str | None, Any, str | None]:
        """The summary's text (None on failure), its usage, and the failure's text."""
        settings = self.settings
        asked = " ".join(text for text in (settings.instructions, instructions) if text)
        options = attrs.evolve(options, tool_choice=None)  # no tools: none to choose
        if settings.model is not None and settings.model.provider != model.provider:
            # the run's key is its provider's: never sent to another provider's server (the
            # summary model's key comes from get_api_key or its provider's environment)
            options = attrs.evolve(options, api_key=None)
        model = settings.model or model
        final: AssistantMessage | None = None
        try:
            seen = await self._as_the_model_sees(messages)
            prompt = summary_prompt(seen, previous, asked or None)
            context = Context(SUMMARY_SYSTEM_PROMPT, [UserMessage(prompt)], ())
            if self.config.get_api_key is not None:
                key = await call_maybe_async(self.config.get_api_key, model.provider)
                if key:
                    options = attrs.evolve(options, api_key=key)
            async with self.stream_fn(model, context, options) as events:
                async for event in events:
                    if isinstance(event, StreamDone):
                        final = event.message
                    elif isinstance(event, StreamError):
                        final = event.error
        except Exception as exc:
            await trio.lowlevel.checkpoint_if_cancelled()
            return None, None, f"Summary request failed: {exception_text(exc)}"
        return _summary_text(final)

    async def _as_the_model_sees(self, messages: list[AgentMessage]) -> Sequence[Message]:
        """``messages`` through the agent's ``convert_to_llm`` (an application's own messages
        are summarised as the model was shown them)."""
        convert = self.config.convert_to_llm
        if convert is None:
            return default_convert_to_llm(messages)
        converted: Sequence[Message] = await call_maybe_async(convert, list(messages))
        return converted

    def _emit(self, event: CompactionStart | CompactionEnd) -> Awaitable[None]:
        return self.emitter.emit(event)


@attrs.frozen
class _Plan:
    """What a compaction cuts: ``messages`` (the transcript when it began, less a response
    that overflowed), the index of the first message kept (``cut``, 0: nothing to cut), the
    summary at the head to update, the system messages before the cut (kept, by index)."""

    messages: list[AgentMessage]
    size: int  # the transcript's length when the compaction began
    cut: int
    previous: str | None
    kept_system: tuple[int, ...]
    tokens_before: int

    @classmethod
    def of(cls, transcript: list[AgentMessage], reason: str, keep_recent: int) -> _Plan:
        messages = list(transcript)
        if reason == "overflow" and messages and isinstance(messages[-1], AssistantMessage):
            messages.pop()  # the error response: the model never sees it anyway
        cut = find_cut(messages, keep_recent)
        head = messages[0] if messages else None
        previous = head.summary if isinstance(head, CompactionSummary) else None
        start = 1 if previous is not None else 0
        kept = tuple(i for i in range(start, cut) if type(messages[i]) is SystemMessage)
        tokens = context_tokens(messages)
        return cls(messages, len(transcript), cut, previous, kept, tokens)

    def older(self) -> list[AgentMessage]:
        """The messages to summarise: those before the cut (not the summary, not a system
        message)."""
        start = 1 if self.previous is not None else 0
        return [m for m in self.messages[start : self.cut] if type(m) is not SystemMessage]

    def kept(self, transcript: list[AgentMessage]) -> list[AgentMessage]:
        """What follows the new summary: the system messages before the cut, the messages
        from it on, and any appended to ``transcript`` in place during the summary request."""
        messages = self.messages
        added = transcript[self.size :]
        return [*(messages[i] for i in self.kept_system), *messages[self.cut :], *added]


def _summary_text(final: AssistantMessage | None) -> tuple[str | None, Any, str | None]:
    """What a summary response gives: its text, or why it cannot be used."""
    if final is None:
        return None, None, "Summary request failed: the stream ended without a response"
    if final.stop_reason in ("error", "aborted"):
        why = final.error_message or final.stop_reason
        return None, final.usage, f"Summary request failed: {why}"
    if final.stop_reason == "length":
        return None, final.usage, "Summary was cut off at the output token limit"
    if final.tool_calls:
        return None, final.usage, "Summary request answered with a tool call"
    text = "".join(b.text for b in final.content if isinstance(b, TextContent)).strip()
    if not text:
        return None, final.usage, "Summary request gave an empty summary"
    return text, final.usage, None


async def compact_context(
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
    *,
    instructions: str | None = None,
) -> CompactionSummary | None:
    """Compact ``context.messages`` (in place) now, outside any run: ``agent.compact()``.

    Uses ``config.compaction`` (its defaults when None), ``config.model`` and
    ``config.stream_fn``; sends ``compaction_start`` and ``compaction_end`` to ``sink``.
    Returns the new summary, or None when there was nothing to cut off or the summary failed
    (``compaction_end.error`` says why).

    On cancellation the messages are unchanged; the aborted ``compaction_end`` is delivered
    (within ``config.close_timeout``) and ``Cancelled`` propagates.

    Raises:
        Exception: what the sink raised while delivering an event (the messages are as the
            events before it said).
    """
    transcript = Transcript(context.messages, incremental_llm=False)
    emitter = Emitter(sink, transcript, trio.CancelScope(), config.close_timeout)
    compactor = Compactor(config.compaction or Compaction(), config, emitter)
    summary: CompactionSummary | None = None
    try:
        with emitter.scope:
            summary = await compactor.compact(
                "manual", config.model, config.stream_options, instructions=instructions
            )
    finally:
        await emitter.close([])
    if emitter.failure is not None:
        raise emitter.failure
    return summary
