"""``AgentTool``: a tool the loop can validate, execute and describe to a model."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeAlias, cast

import attrs
import outcome
import trio

from .._callbacks import is_async_callable, is_generator_function
from .._checks import describe
from .._groups import plain_exception
from .._logging import tools_logger
from ..events import ToolResult
from ..messages import Tool
from ._threads import tool_thread_limiter
from ._validation import ArgumentValidator

__all__ = [
    "AgentTool",
    "OnUpdate",
    "ToolExecute",
    "ToolExecutionMode",
]

ToolExecutionMode: TypeAlias = Literal["sequential", "parallel"]
OnUpdate: TypeAlias = Callable[[ToolResult], Awaitable[None]]
ToolExecute: TypeAlias = Callable[[str, Any, OnUpdate], Awaitable[ToolResult] | ToolResult]


@attrs.frozen
class AgentTool:
    """A tool: what the model sees (name, description, parameters) and how to run it.

    ``parameters`` is an attrs class (arguments are validated against its generated JSON
    schema, coerced like pi does, then structured into an instance) or a JSON-schema dict
    (arguments are validated and coerced, and ``execute`` gets the dict).

    ``execute(tool_call_id, params, on_update)`` returns a :class:`pt.ToolResult` (a plain
    string is accepted as its text). An ``async def`` runs in the loop's task and is stopped at
    its next ``await`` when the run is aborted: it needs no abort signal. A plain ``def`` runs in
    a worker thread with ``abandon_on_cancel=True``: on abort the run goes on without waiting
    for it, and its eventual return value is discarded. Sync tools' threads have their own
    limiter (:func:`pt.tool_thread_limiter`), so abandoned ones never starve the process's.
    ``on_update(partial)`` streams progress as ``tool_execution_update`` events (a sync tool
    gets a sync ``on_update``).

    ``execution_mode="sequential"`` makes any batch containing this tool run one call at a time.
    ``timeout`` (seconds) bounds one execution: past it the call gets the error result "Tool
    <name> timed out after N s" and the batch goes on (a sync tool's thread is abandoned); None
    uses the loop's ``tool_timeout`` (default: no limit).
    ``prepare_arguments(args) -> args``, a plain function, may rewrite raw arguments before
    validation (renamed parameters, legacy shapes).

    ``replay`` matters to durable sessions (:mod:`pi_trio.sessions`) only: a call interrupted
    by a crash after it started is never re-run with ``"never"`` (the default; the model is told
    its outcome is unknown), and is re-run on resume with ``"safe"`` (for idempotent tools).

    ``requires_approval`` (True, or a policy called with the call's
    :class:`pt.BeforeToolCallContext` once its arguments validated, returning a bool or an
    awaitable of one) makes a call wait for a person: it does not run, the run ends with it in
    ``agent.state.pending_approvals``, and ``agent.approve``/``agent.deny`` then
    ``agent.continue_()`` decide (see :mod:`pi_trio.tools._approval`).
    """

    name: str
    label: str
    description: str
    parameters: type[Any] | Mapping[str, Any]
    execute: ToolExecute
    execution_mode: ToolExecutionMode | None = None
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    timeout: float | None = attrs.field(default=None, kw_only=True)
    replay: Literal["never", "safe"] = attrs.field(default="never", kw_only=True)
    requires_approval: bool | Callable[[Any], bool | Awaitable[bool]] = attrs.field(
        default=False, kw_only=True
    )
    output_schema: Mapping[str, Any] | None = attrs.field(default=None, kw_only=True)
    """pi 1.x's ``outputSchema``: the JSON schema of the tool's ``structured_content``, for
    programmatic callers (never sent to the model, never checked by the loop)."""
    validator: ArgumentValidator = attrs.field(init=False, repr=False, eq=False)
    spec: Tool = attrs.field(init=False, repr=False, eq=False)
    is_async: bool = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if not callable(self.execute) or is_generator_function(self.execute):
            raise TypeError(
                f"AgentTool {self.name!r}: execute must be a function (sync or async) that "
                f"returns the result, got {describe(self.execute)}"
                + (": report progress with on_update" if callable(self.execute) else "")
            )
        prepare = self.prepare_arguments
        if prepare is not None and (not callable(prepare) or is_async_callable(prepare)):
            raise TypeError(
                f"AgentTool {self.name!r}: prepare_arguments must be a plain function "
                "(arguments -> arguments, run before validation), got "
                + ("an async function" if callable(prepare) else describe(prepare))
            )
        if not isinstance(self.requires_approval, bool) and not callable(self.requires_approval):
            raise TypeError(
                f"AgentTool {self.name!r}: requires_approval must be True, False or a callable "
                f"taking the BeforeToolCallContext, got {describe(self.requires_approval)}"
            )
        if self.replay not in ("never", "safe"):
            raise ValueError(
                f"AgentTool {self.name!r}: replay must be 'never' or 'safe', got {self.replay!r}"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(
                f"AgentTool {self.name!r}: timeout must be > 0 seconds, got {self.timeout!r}"
            )
        validator = ArgumentValidator.for_parameters(self.parameters)
        object.__setattr__(self, "validator", validator)
        object.__setattr__(self, "spec", Tool(self.name, self.description, validator.schema))
        object.__setattr__(self, "is_async", is_async_callable(self.execute))

    def validate(self, arguments: dict[str, Any]) -> Any:
        """Validated (and coerced) arguments; :class:`pt.ToolArgumentError` with pi's text."""
        return self.validator.validate(self.name, arguments)

    def run(self, tool_call_id: str, params: Any, on_update: OnUpdate) -> Awaitable[Any]:
        """The tool's execution, to await at once: an async tool's own coroutine (not wrapped
        in one of this method), or a sync tool in a worker thread that is abandoned on
        cancel. The awaitable returns what ``execute`` returned and raises what it raised."""
        if self.is_async:
            return self.execute(tool_call_id, params, on_update)  # type: ignore[return-value]
        return self._run_in_thread(tool_call_id, params, on_update)

    async def _run_in_thread(self, tool_call_id: str, params: Any, on_update: OnUpdate) -> Any:
        """A sync tool in a worker thread; its updates come back through a channel.

        ``trio.from_thread.run`` would run ``on_update`` in a system task (the thread is
        abandonable), outside the run's cancel scope and possibly after the run. Instead the
        thread drops updates into a channel that a task of this call forwards, so listeners
        run inside the run and never after it; updates from an abandoned thread go nowhere.
        """
        send, receive = trio.open_memory_channel[ToolResult](math.inf)

        def update_from_thread(partial: ToolResult) -> None:
            # once the call is over (abandoned), nobody is listening any more
            with contextlib.suppress(trio.ClosedResourceError, trio.RunFinishedError):
                trio.from_thread.run_sync(send.send_nowait, partial)

        async def forward() -> None:
            async with receive:
                async for partial in receive:
                    await on_update(partial)

        execute_sync = cast(Callable[[str, Any, Callable[[ToolResult], None]], Any], self.execute)
        result: outcome.Outcome[Any] | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(forward)
                try:
                    value = await trio.to_thread.run_sync(
                        execute_sync, tool_call_id, params, update_from_thread,
                        abandon_on_cancel=True, limiter=tool_thread_limiter(),
                    )  # fmt: skip
                    result = outcome.Value(value)
                except Exception as exc:  # the tool's failure, reported after the updates
                    result = outcome.Error(exc)
                finally:
                    send.close()  # forward() delivers what is queued, then ends
        except BaseExceptionGroup as group:
            # the cancellation, or a KeyboardInterrupt from the thread: plain, never a group
            raise plain_exception(group, tools_logger) from None
        assert result is not None
        return result.unwrap()
