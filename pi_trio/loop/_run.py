"""One run of the agent loop: pi's double loop, with Trio's cancellation.

Inner loop: an assistant turn, its tool batch, then steering messages; outer loop: follow-ups
once the agent would stop. The run keeps its state (``turn_open``, the streaming ``partial``
message, the current tool ``batch``) up to date *before* every event it sends, so that when it
is cancelled, wherever that happens, :meth:`_Run.close` can complete the transcript to pi's
aborted shape synchronously and only then try to deliver the closing events, in one shielded
scope bounded by ``config.close_timeout``.

Failures of the application's callbacks (the event sink, a steering poll,
``should_stop_after_turn``) end the run the same way, with stop_reason "error": the run's own
cancel scope is cancelled, so the failure travels as a cancellation through whatever is running
(a tool batch nursery included) and never as an exception group.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar, cast, overload

import attrs
import trio

from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    TurnEnd,
    TurnStart,
)
from ..messages import (
    AgentMessage,
    AssistantMessage,
    Context,
    Message,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..providers import ABORTED_MESSAGE, StreamOptions, stream_simple
from ..tools import AgentContext, ToolBatch, exception_text
from ..tools._batch import _call_hook
from ._config import AgentLoopConfig, EventSink, ShouldStopAfterTurnContext

__all__ = ["LENGTH_TOOL_TEXT", "TranscriptView", "default_convert_to_llm", "run"]

T = TypeVar("T")

_LLM_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)
_UPDATE_TYPES = frozenset(
    {
        TextStart,
        TextDelta,
        TextEnd,
        ThinkingStart,
        ThinkingDelta,
        ThinkingEnd,
        ToolCallStart,
        ToolCallDelta,
        ToolCallEnd,
    }
)
_NO_END = "the stream ended without a done or error event"

LENGTH_TOOL_TEXT = (
    'Tool call "{name}" was not executed: the response was cut off at the output token limit '
    '(stop reason "length"), so its arguments may be incomplete. Call the tool again with '
    "complete arguments."
)


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """pi's default: user, assistant and tool-result messages pass; custom messages do not."""
    return [m for m in messages if isinstance(m, _LLM_TYPES)]


class TranscriptView(Sequence[T]):
    """A read-only view of the first ``length`` items of an append-only list: an O(1) snapshot
    of the transcript for one request."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("transcript index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._length)

    def __repr__(self) -> str:
        return f"TranscriptView({self._items[: self._length]!r})"


class _Run:
    def __init__(self, context: AgentContext, config: AgentLoopConfig, sink: EventSink) -> None:
        self.context = context
        self.config = config
        self.sink = sink
        self.transcript = context.messages
        self.stream_fn = config.stream_fn or stream_simple
        self.new_messages: list[AgentMessage] = []
        self.tools = {tool.name: tool for tool in context.tools}
        self.tool_specs = tuple(tool.spec for tool in context.tools)
        incremental = config.convert_to_llm is None and config.transform_context is None
        self.llm_view: list[Message] | None = (
            default_convert_to_llm(self.transcript) if incremental else None
        )
        self.turn_open = False
        self.unannounced: collections.deque[AgentMessage] = (
            collections.deque()
        )  # in the transcript, message_start not yet sent
        self.partial: AssistantMessage | None = None
        self.batch: ToolBatch | None = None
        self.answer: AssistantMessage | None = None  # this turn's complete reply, no tool calls
        self.ended = False
        self.failure: BaseException | None = None
        self.interrupted: AgentEvent | None = None  # an event whose send was cancelled
        self.scope = trio.CancelScope()

    # --- plumbing ----------------------------------------------------------------------------

    async def emit(self, event: AgentEvent) -> None:
        try:
            await self.sink.send(event)
        except Exception as exc:
            await self._fail(exc)
        except BaseException:
            self.interrupted = event
            raise

    async def _fail(self, exc: BaseException) -> None:
        """End the run with stop_reason "error": cancel our own scope and unwind."""
        if self.failure is None:
            self.failure = exc
        self.scope.cancel()
        await trio.lowlevel.checkpoint()  # raises Cancelled when we are inside our scope
        # not inside it (a shield, a from_thread system task): report the failure itself
        raise exc

    async def _hook(self, hook: Callable[..., Any], *args: Any) -> Any:
        try:
            return await _call_hook(hook, *args)
        except Exception as exc:
            await self._fail(exc)

    def _record(self, message: AgentMessage, *, in_transcript: bool = False) -> None:
        if not in_transcript:
            self.transcript.append(message)
        self.new_messages.append(message)
        if self.llm_view is not None and isinstance(message, _LLM_TYPES):
            self.llm_view.append(message)

    def _bare_message(self, reason: Literal["error", "aborted"], text: str) -> AssistantMessage:
        model = self.config.model
        return AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason=reason,
            error_message=text,
        )

    # --- the run -----------------------------------------------------------------------------

    async def execute(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        try:
            with self.scope:
                await self._body(prompts)
        except BaseException as exc:
            # Cancelled from the caller (or a bug): close the transcript, then let it out.
            if self.failure is None and isinstance(exc, Exception):
                self.failure = exc
            await self.close()
            raise
        if self.failure is not None:
            await self.close()
        return self.new_messages

    async def _body(self, prompts: Sequence[AgentMessage] | None) -> None:
        self._take(prompts or ())
        await self.emit(AgentStart())
        self.turn_open = True
        await self.emit(TurnStart())
        if self.unannounced:
            await self._announce()
        await self._loop()

    def _take(self, messages: Sequence[AgentMessage]) -> bool:
        """Record new input messages at once (state first); they are announced later."""
        for message in messages:
            self._record(message)
            self.unannounced.append(message)
        return bool(messages)

    async def _announce(self) -> None:
        while self.unannounced:
            message = self.unannounced.popleft()
            await self.emit(MessageStart(message))
            await self.emit(MessageEnd(message))

    async def _poll(self, source: Callable[[], Any] | None) -> bool:
        """Take queued steering/follow-up messages; True when there were any."""
        if source is None:
            return False
        return self._take(list(await self._hook(source) or ()))

    async def _loop(self) -> None:
        config = self.config
        first_turn = True
        pending = await self._poll(config.get_steering_messages)
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    self.answer = None
                    self.turn_open = True
                    await self.emit(TurnStart())
                if self.unannounced:
                    await self._announce()
                pending = False

                message = await self._assistant_turn()
                if message.stop_reason == "error" or message.stop_reason == "aborted":
                    self.turn_open = False
                    await self.emit(TurnEnd(message, []))
                    await self._end()
                    return

                tool_results: list[ToolResultMessage] = []
                more_tool_calls = False
                batch = self.batch
                if batch is not None:
                    refuse = None
                    if message.stop_reason == "length":
                        names = ", ".join(call.name for call in batch.calls)
                        refuse = LENGTH_TOOL_TEXT.format(name=names)
                    await batch.run(refuse)
                    tool_results = batch.messages
                    more_tool_calls = not batch.terminate
                    self.batch = None
                self.turn_open = False
                await self.emit(TurnEnd(message, tool_results))

                if config.should_stop_after_turn is not None and await self._hook(
                    config.should_stop_after_turn,
                    ShouldStopAfterTurnContext(
                        message, tool_results, self.context, self.new_messages
                    ),
                ):
                    await self._end()
                    return
                if config.get_steering_messages is not None:
                    pending = await self._poll(config.get_steering_messages)

            if config.get_follow_up_messages is not None:
                pending = await self._poll(config.get_follow_up_messages)
            if not pending:
                break
        await self._end()

    async def _end(self) -> None:
        self.ended = True
        await self.emit(AgentEnd(self.new_messages))

    # --- one assistant response --------------------------------------------------------------

    async def _request(self) -> tuple[Context, StreamOptions]:
        config = self.config
        if self.llm_view is not None:
            llm: Sequence[Message] = TranscriptView(self.llm_view, len(self.llm_view))
        else:
            # the hooks get their own copy of the transcript: theirs to slice, filter or extend
            messages: Sequence[AgentMessage] = list(self.transcript)
            if config.transform_context is not None:
                messages = await _call_hook(config.transform_context, messages)
            if config.convert_to_llm is not None:
                llm = await _call_hook(config.convert_to_llm, messages)
            else:
                llm = default_convert_to_llm(messages)
        options = config.stream_options
        if config.get_api_key is not None:
            key = await _call_hook(config.get_api_key, config.model.provider)
            if key:
                options = attrs.evolve(options, api_key=key)
        return Context(self.context.system_prompt, llm, self.tool_specs), options

    async def _assistant_turn(self) -> AssistantMessage:
        # One schedule point per model call: an aborted run never calls the model, and a run on
        # an instant model with instant tools still lets deadlines and other tasks in.
        await trio.lowlevel.checkpoint()
        final: AssistantMessage | None = None
        failure: Exception | None = None
        try:
            context, options = await self._request()
        except Exception as exc:
            return await self._finish_response(None, exc)
        send = self.sink.send
        try:
            async with self.stream_fn(self.config.model, context, options) as events:
                async for event in events:
                    cls = type(event)
                    if cls in _UPDATE_TYPES:  # the hot path: one per streamed delta
                        if self.partial is None:
                            continue  # pi ignores updates before "start"
                        partial = event.partial  # type: ignore[union-attr]
                        if partial is not self.partial:
                            self.partial = partial
                            self.transcript[-1] = partial
                        update = MessageUpdate(partial, event)
                        try:  # self.emit(update), inlined: no extra coroutine per delta
                            await send(update)
                        except Exception as exc:
                            await self._fail(exc)
                        except BaseException:
                            self.interrupted = update
                            raise
                    elif cls is StreamStart:
                        partial = cast(StreamStart, event).partial
                        if self.partial is None:
                            self.transcript.append(partial)
                        else:  # a second "start": it replaces the first partial message
                            self.transcript[-1] = partial
                        self.partial = partial
                        await self.emit(MessageStart(partial))
                    elif cls is StreamDone:
                        final = cast(StreamDone, event).message
                        break
                    elif cls is StreamError:
                        final = cast(StreamError, event).error
                        break
        except Exception as exc:
            failure = exc
        if final is None or final.stop_reason == "error":
            # a failure that surfaced while a cancellation was pending (a connect cut short, a
            # close that failed): the cancellation wins, the run is aborted, not errored
            await trio.lowlevel.checkpoint_if_cancelled()
        return await self._finish_response(final, failure)

    async def _finish_response(
        self, final: AssistantMessage | None, failure: Exception | None
    ) -> AssistantMessage:
        partial = self.partial
        if final is None:
            text = exception_text(failure) if failure is not None else _NO_END
            message = partial if partial is not None else self._bare_message("error", text)
            message.stop_reason = "error"
            message.error_message = text
        else:
            message = final
        if partial is not None:
            if message is not partial:
                self.transcript[-1] = message
            self._record(message, in_transcript=True)
        else:
            self._record(message)
        self.partial = None
        failed = message.stop_reason == "error" or message.stop_reason == "aborted"
        calls = [] if failed else message.tool_calls
        if not failed and not calls:
            self.answer = message
        if calls:
            config = self.config
            self.batch = ToolBatch(
                message,
                calls,
                self.context,
                self.tools,
                self.emit,
                self._record,
                sequential=config.tool_execution == "sequential",
                before_tool_call=config.before_tool_call,
                after_tool_call=config.after_tool_call,
            )
        if partial is None:
            await self.emit(MessageStart(message))
        await self.emit(MessageEnd(message))
        return message

    # --- closing an aborted or failed run -----------------------------------------------------

    def _closing_events(self) -> list[AgentEvent]:
        """Complete the transcript to pi's aborted shape; return the events still to send."""
        if self.ended:
            return []
        if self.failure is None:
            reason: Literal["error", "aborted"] = "aborted"
            text = ABORTED_MESSAGE
        else:
            reason, text = "error", exception_text(self.failure)
        events: list[AgentEvent] = []
        if self.failure is None and self.answer is not None and not self.unannounced:
            # the model had answered and asked for nothing: the run was ending anyway
            if self.turn_open:
                events.append(TurnEnd(self.answer, []))
            self.turn_open = False
            self.ended = True
            events.append(AgentEnd(self.new_messages))
            return events
        partial = self.partial
        if partial is not None:  # mid-stream: the partial message is the run's last word
            self.partial = None
            partial.stop_reason = reason
            partial.error_message = text
            self._record(partial, in_transcript=True)
            events += [MessageEnd(partial), TurnEnd(partial, [])]
        else:
            if self.batch is not None:
                batch, self.batch = self.batch, None
                events += batch.close_out()
                events.append(TurnEnd(batch.assistant, batch.messages))
                self.turn_open = False
            if not self.turn_open:
                events.append(TurnStart())
            for queued in self.unannounced:  # taken from a queue: in the transcript already
                events += [MessageStart(queued), MessageEnd(queued)]
            self.unannounced.clear()
            message = self._bare_message(reason, text)
            self._record(message)
            events += [MessageStart(message), MessageEnd(message), TurnEnd(message, [])]
        self.turn_open = False
        self.ended = True
        events.append(AgentEnd(self.new_messages))
        return events

    async def close(self) -> None:
        """Finish the transcript, then deliver the closing events within the grace period."""
        events = self._closing_events()
        if (
            events
            and self.interrupted is not None
            and isinstance(self.sink, trio.MemorySendChannel)
        ):
            # a memory channel's cancelled send delivered nothing: send that event first
            events.insert(0, self.interrupted)
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + self.config.close_timeout
            for event in events:
                try:
                    await self.sink.send(event)
                except Exception:
                    continue  # a failing sink may still deliver the rest (other listeners)


async def run(
    prompts: Sequence[AgentMessage] | None,
    context: AgentContext,
    config: AgentLoopConfig,
    sink: EventSink,
) -> list[AgentMessage]:
    return await _Run(context, config, sink).execute(prompts)
