"""The scripted model: answers each request from a script, streamed like a real provider.

For tests, demos and benchmarks: no network, no key. Each call takes the next step of the
script: an :class:`AssistantMessage` to stream, a factory ``(context, options, call_index) ->
AssistantMessage`` (sync or async) that decides the answer from what the model was sent, or an
exception instance (the request fails before anything is streamed, like a refused connection).

Streaming follows pi-ai's faux provider: ``start``; per block ``*_start``, deltas, ``*_end``
(a tool call gets one ``toolcall_delta`` with its JSON arguments); then ``done``, or ``error``
when the scripted message's stop_reason is "error"/"aborted". Text is cut into deltas by
``chunker`` (by words by default, which reproduces pi's recorded traces). With
``token_delay > 0`` each delta waits ``trio.sleep(token_delay)`` first, so a
``trio.testing.MockClock`` drives the pace. On cancellation the stream stops where it is and
emits nothing more: building the aborted message is the loop's job.

    scripted = pt.faux.FauxModel([pt.faux.assistant_message("Hello!")])
    agent = pt.Agent(stream_fn=scripted, initial_state=pt.AgentState(model=scripted.model))
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import re
import secrets
import weakref
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any, Final, Literal, TypeAlias

import attrs
import trio

from ..events import StreamEvent, TextDelta
from ..messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from ..models import Model, get_model
from ._builder import MessageBuilder
from ._options import StreamOptions

__all__ = [
    "FauxCall",
    "FauxModel",
    "FauxResponse",
    "assistant_message",
    "by_size",
    "by_words",
    "in_pieces",
    "text",
    "thinking",
    "tool_call",
]

FauxFactory: TypeAlias = Callable[
    [Context, StreamOptions, int], "AssistantMessage | Awaitable[AssistantMessage]"
]
FauxResponse: TypeAlias = AssistantMessage | BaseException | FauxFactory
Chunker: TypeAlias = Callable[[str], Sequence[str]]

NO_MORE_RESPONSES = "No more faux responses queued"

_WORD = re.compile(r"\s*\S+\s*")

# The chunkers made here are pure functions of the text, so their pieces may be reused: the
# pieces of short texts are remembered per chunker, for the whole process (scripts repeat the
# same texts many times, and thousands of scripted agents share one cache, not one each).
_PIECES: weakref.WeakKeyDictionary[Chunker, dict[str, tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)
_CACHED_TEXT_MAX: Final = 1024  # longer texts are cut every time: the cut is small beside them
_CACHE_ENTRIES_MAX: Final = 256
_COMPACT_JSON: Final = json.JSONEncoder(separators=(",", ":"))
_new = object.__new__  # an event built without its __init__: see _generate


def by_words(value: str) -> list[str]:
    """Cut text into words, each with the whitespace around it (the default)."""
    return _WORD.findall(value) or [value]


_PIECES[by_words] = {}


@functools.lru_cache(maxsize=64)
def by_size(size: int) -> Chunker:
    """A chunker that cuts text into pieces of ``size`` characters (the same function for
    the same size)."""
    if size < 1:
        raise ValueError("chunk size must be at least 1")

    def chunk(value: str) -> list[str]:
        return [value[i : i + size] for i in range(0, len(value), size)] or [value]

    _PIECES[chunk] = {}
    return chunk


@functools.lru_cache(maxsize=64)
def in_pieces(count: int) -> Chunker:
    """A chunker that cuts text into ``count`` nearly equal pieces (fewer for short text;
    the same function for the same count)."""
    if count < 1:
        raise ValueError("piece count must be at least 1")

    def chunk(value: str) -> list[str]:
        n = max(1, min(count, len(value)))
        step, extra = divmod(len(value), n)
        pieces, start = [], 0
        for i in range(n):
            end = start + step + (1 if i < extra else 0)
            pieces.append(value[start:end])
            start = end
        return pieces

    _PIECES[chunk] = {}
    return chunk


def text(value: str) -> TextContent:
    return TextContent(value)


def thinking(value: str, signature: str | None = None) -> ThinkingContent:
    return ThinkingContent(value, thinking_signature=signature)


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None
) -> ToolCall:
    """A tool call; without ``id`` a random one is made."""
    return ToolCall(id=id or f"call_{secrets.token_hex(6)}", name=name, arguments=arguments or {})


def assistant_message(
    content: str | AssistantContent | Iterable[AssistantContent],
    *,
    stop_reason: Literal["stop", "length", "toolUse", "error", "aborted"] | None = None,
    error_message: str | None = None,
    usage: Usage | None = None,
) -> AssistantMessage:
    """A scripted answer. ``stop_reason`` defaults to "toolUse" when there are tool calls."""
    if isinstance(content, str):
        blocks: list[AssistantContent] = [TextContent(content)]
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = list(content)
    if stop_reason is None:
        stop_reason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    return AssistantMessage(
        content=blocks,
        api="faux",
        provider="faux",
        model="faux-1",
        usage=usage or Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
    )


@attrs.frozen
class FauxCall:
    """One request the scripted model received."""

    model: Model
    context: Context
    options: StreamOptions


class FauxModel:
    """A scripted model; the instance itself is a stream function (``stream_fn=scripted``).

    ``responses`` is a list (or any collection), taken in order, or an iterator or generator,
    taken lazily one step per call (``itertools.repeat(step)`` answers forever); steps of an
    iterator are not counted by :attr:`pending_count` until taken.

    Every request is kept in :attr:`calls` (its model, context and options), for tests to
    look at. ``record_calls=False`` keeps only the count (:attr:`call_count`): a scripted
    model that answers for a long time, or one per agent among thousands (the benchmarks),
    then holds no request's context.
    """

    def __init__(
        self,
        responses: Iterable[FauxResponse] = (),
        *,
        model: Model | None = None,
        chunker: Chunker = by_words,
        token_delay: float = 0.0,
        record_calls: bool = True,
    ) -> None:
        self.model: Model = model or get_model("faux", "faux-1")
        self.chunker = chunker
        self.token_delay = token_delay
        self.calls: list[FauxCall] = []
        self.record_calls = record_calls
        self._count = 0  # requests received (recorded in calls or not)
        # the script, and the index of its next step (a taken step's slot is cleared): a list
        # costs a tenth of a deque's memory for a short script, which matters per agent
        self._pending: list[FauxResponse | None] = []
        self._next = 0
        self._lazy: Iterator[FauxResponse] | None = None
        self.append_responses(responses)
        # the shared cache of ``chunker``'s pieces (None: not one of ours, cut every time)
        self._pieces_chunker: Chunker = chunker
        self._pieces_by_text: dict[str, tuple[str, ...]] | None = _PIECES.get(chunker)

    def set_responses(self, responses: Iterable[FauxResponse]) -> None:
        self._pending, self._next, self._lazy = [], 0, None
        self.append_responses(responses)

    def append_responses(self, responses: Iterable[FauxResponse]) -> None:
        if self._lazy is not None:
            self._lazy = itertools.chain(self._lazy, responses)
        elif isinstance(responses, Collection):
            self._pending.extend(responses)
        else:  # an iterator, maybe endless: never read ahead
            self._lazy = iter(responses)

    def _next_step(self) -> FauxResponse | None:
        pending = self._pending
        index = self._next
        if index < len(pending):
            step = pending[index]
            if index + 1 == len(pending):  # the script is used up: drop the cleared slots
                pending.clear()
                self._next = 0
            else:
                pending[index] = None
                index += 1
                if index * 2 >= len(pending):
                    # mostly cleared slots: drop them, or a script kept a step ahead (appended
                    # to before each call) grows by a slot per call for ever
                    del pending[:index]
                    index = 0
                self._next = index
            return step
        if self._lazy is not None:
            step = next(self._lazy, None)
            if step is None:
                self._lazy = None
            return step
        return None

    @property
    def pending_count(self) -> int:
        return len(self._pending) - self._next

    @property
    def call_count(self) -> int:
        """Requests received so far (also when ``record_calls`` is off)."""
        return self._count

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        return self.stream(model, context, options)

    def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Take the next step of the script (at call time, like pi) and stream it."""
        index = self._count
        self._count = index + 1
        if self.record_calls:
            self.calls.append(FauxCall(model, context, options))
        step = self._next_step()
        return aclosing(self._generate(step, model, context, options, index))

    async def _generate(
        self,
        step: FauxResponse | None,
        model: Model,
        context: Context,
        options: StreamOptions,
        index: int,
    ) -> AsyncGenerator[StreamEvent, None]:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            if step is None:
                raise LookupError(NO_MORE_RESPONSES)
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, AssistantMessage):
                script = step
            else:
                produced = step(context, options, index)
                script = await produced if inspect.isawaitable(produced) else produced
        except Exception as exc:
            yield MessageBuilder(model).error(str(exc) or type(exc).__name__)
            return
        builder = MessageBuilder(model, usage=_copy_usage(script.usage))
        builder.message.response_id = script.response_id
        yield builder.start()
        delay = self.token_delay
        for block in script.content:
            if isinstance(block, TextContent):
                text_start = builder.text_start()
                i = text_start.content_index
                yield text_start
                if delay:
                    for piece in self._pieces(block.text):
                        await trio.sleep(delay)
                        yield builder.text_delta(i, piece)
                else:
                    # builder.text_delta inlined: this loop is the whole cost of a long stream
                    # i is the TextContent that text_start just added
                    append = builder.message.content[i].appender()  # type: ignore[union-attr]
                    partial = builder.message
                    for piece in self._pieces(block.text):
                        append(piece)
                        # TextDelta(i, piece, partial), without the Python __init__ call
                        delta = _new(TextDelta)
                        delta.extra = None
                        delta.content_index = i
                        delta.delta = piece
                        delta.partial = partial
                        yield delta
                    del append  # text_end's read then frees the block's piece list
                yield builder.text_end(i, block.text_signature)
            elif isinstance(block, ThinkingContent):
                thinking_start = builder.thinking_start()
                i = thinking_start.content_index
                yield thinking_start
                for piece in self._pieces(block.thinking):
                    if delay:
                        await trio.sleep(delay)
                    yield builder.thinking_delta(i, piece)
                yield builder.thinking_end(i, block.thinking_signature, block.redacted or None)
            else:
                call = builder.tool_call_start(block.id, block.name)
                i = call.content_index
                yield call
                if delay:
                    await trio.sleep(delay)
                arguments = block.arguments
                yield builder.tool_call_delta(
                    i, _COMPACT_JSON.encode(arguments) if arguments else "{}"
                )
                yield builder.tool_call_end(i)
        reason = script.stop_reason
        if reason == "error" or reason == "aborted":
            yield builder.error(script.error_message or "", reason)
        else:  # a scripted "pending" (pi 1.6: not final yet) ends as the builder decides
            yield builder.done(None if reason == "pending" else reason)

    def _pieces(self, text: str) -> Sequence[str]:
        """``chunker(text)``, remembered for short texts when the chunker is one of ours."""
        chunker = self.chunker
        if chunker is not self._pieces_chunker:  # a new chunker takes effect at once
            self._pieces_chunker = chunker
            self._pieces_by_text = _PIECES.get(chunker)
        cache = self._pieces_by_text
        if cache is None:
            return chunker(text)
        pieces = cache.get(text)
        if pieces is None:
            if len(text) > _CACHED_TEXT_MAX:
                return chunker(text)
            if len(cache) >= _CACHE_ENTRIES_MAX:
                cache.clear()
            pieces = cache[text] = tuple(chunker(text))
        return pieces


def _copy_usage(usage: Usage) -> Usage:
    """``attrs.evolve(usage)`` without its generic overhead (``cost`` is shared, as there)."""
    if type(usage) is not Usage:
        return attrs.evolve(usage)
    return Usage(
        usage.input,
        usage.output,
        usage.cache_read,
        usage.cache_write,
        usage.total_tokens,
        usage.cost,
    )


def stream_unscripted(
    model: Model, context: Context, options: StreamOptions
) -> AsyncGenerator[StreamEvent, None]:
    """The registry's entry for api "faux" with no script: it reports that nothing is queued.

    Pass a :class:`FauxModel` as ``stream_fn`` (or ``register_api`` its ``stream``) to script.
    """
    return FauxModel(model=model)._generate(None, model, context, options, 0)
