"""Structured output: the tool a model gives its final answer through, and reading it back.

``output_tool(Invoice)`` is an ordinary :class:`AgentTool` whose parameters are the output
type (an attrs class, or a JSON-schema dict describing an object), so a call's arguments are
coerced, validated and structured like any tool's, and an invalid call gets pi's validation
error as its result. A valid call's result carries the value as JSON twice: in
``structured_content`` (pi 1.x's field, in ``tool_execution_end``) and in
``details["structured_content"]``, which is what the transcript and a durable session's log
keep (pi's tool result message has no field for it; MCP results use the same key). Reading a
transcript back (:func:`last_output`) structures that JSON again through the tool's own
validator, so a resumed agent gets the same ``Invoice`` a live run gave.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, get_origin

import attrs

from .._errors import ToolArgumentError
from ..events import ToolResult
from ..messages import AgentMessage, TextContent, ToolResultMessage
from ._agent_tool import AgentTool, OnUpdate
from ._schema import _doc_summary

__all__ = ["OUTPUT_KEY", "OutputType", "last_output", "output_json", "output_tool"]

OutputType = type | Mapping[str, Any]
"""What a structured output is described by: an attrs class, or a JSON-schema dict."""

OUTPUT_KEY: Final = "structured_content"
"""The key of a valid output result's ``details`` that holds the value as JSON."""

ACCEPTED_TEXT: Final = "Final result accepted."


@functools.cache
def _json_converter() -> Any:
    """The cattrs converter that writes an output value as JSON (sets and tuples as lists,
    enums as their values); made on first use, like the validators' (cattrs is imported
    lazily). A set is written sorted (when its items sort): the same value gives the same
    JSON in every process, whatever the hash seed (a log, a prompt cache)."""
    from cattrs.preconf.json import make_converter

    converter = make_converter()

    def sorted_set(value: Any) -> list[Any]:
        written = [converter.unstructure(item) for item in value]
        try:
            return sorted(written)
        except TypeError:  # items of mixed or unordered types: by their JSON text
            return sorted(written, key=lambda item: json.dumps(item, sort_keys=True, default=str))

    converter.register_unstructure_hook_func(_is_set_type, sorted_set)
    return converter


def _is_set_type(type_: Any) -> bool:
    origin = get_origin(type_) or type_
    return isinstance(origin, type) and issubclass(origin, AbstractSet)


def output_json(value: Any) -> Any:
    """An output value as JSON: an attrs instance unstructured (field names as keys, nested
    classes as objects, enums as their values, tuples as lists, sets as sorted lists);
    anything else (the dict a JSON-schema output gives) as it is.

    What a valid output tool result carries in ``structured_content``; a parent agent's tool
    gives a child's ``agent.state.output`` to its own result this way.
    """
    if attrs.has(type(value)):
        return _json_converter().unstructure(value)
    return value


def output_tool(
    output_type: OutputType,
    *,
    name: str = "final_result",
    description: str | None = None,
) -> AgentTool:
    """The tool a model gives its final answer through (``terminate=True``).

    Its parameters are ``output_type``; a valid call returns a result whose
    ``structured_content`` (and ``details["structured_content"]``) is the value as JSON
    (:func:`output_json`), with ``terminate=True``. An invalid call gets pi's validation error,
    as any tool's does. ``pt.Agent(output_type=...)`` makes and offers this tool itself; use it
    directly to offer it with :func:`pt.run_agent_loop` (``AgentLoopConfig(output_tool=...)``)
    or in a tool list of your own.

    Args:
        output_type: an attrs class (the value is an instance of it, built with cattrs) or a
            JSON-schema dict describing an object (the value is the validated dict).
        name: the tool's name for the model.
        description: what the model is told the tool is for (default: a sentence saying it
            gives the final answer, with the class docstring's first paragraph).

    Raises:
        TypeError: ``output_type`` is neither an attrs class nor a dict, or the class has a
            field type JSON cannot express.
        ValueError: the dict is not a valid JSON schema, or does not describe an object
            (``"type": "object"``): a tool's arguments are an object.
    """
    if isinstance(output_type, type):
        if not attrs.has(output_type):
            raise TypeError(
                f"output_type must be an attrs class or a JSON-schema dict, got the class "
                f"{output_type.__qualname__} (decorate it with @attrs.define or @attrs.frozen)"
            )
    elif isinstance(output_type, Mapping):
        if output_type.get("type") != "object":
            raise ValueError(
                'output_type: a JSON-schema dict must describe an object ("type": "object", '
                f"with its properties), got type {output_type.get('type')!r}; wrap a single "
                'value in an object: {"type": "object", "properties": {"value": ...}}'
            )
    else:
        raise TypeError(
            "output_type must be an attrs class or a JSON-schema dict, "
            f"got a {type(output_type).__name__}"
        )
    if description is None:
        description = "Give your final answer by calling this tool; it ends the conversation."
        summary = _doc_summary(output_type) if isinstance(output_type, type) else ""
        if summary:
            description += f" The answer: {summary}"

    async def accept(tool_call_id: str, value: Any, on_update: OnUpdate) -> ToolResult:
        data = output_json(value)
        try:  # the value is read back from this JSON (by the run, and by a resumed session)
            tool.validate(data)
        except ToolArgumentError as exc:
            text = (
                f"The output type cannot read back its own JSON ({exc}): an attrs converter, "
                "or a field whose JSON is not what it takes? The application must fix its "
                "output type; the answer cannot be kept."
            )
            return ToolResult([TextContent(text)], is_error=True)
        return ToolResult(
            [TextContent(ACCEPTED_TEXT)],
            details={OUTPUT_KEY: data},
            terminate=True,
            structured_content=data,
        )

    tool = AgentTool(name, name, description, output_type, accept)
    return tool


_NONE: Final = object()


def output_value(tool: AgentTool, message: ToolResultMessage) -> Any:
    """The value a result of ``tool`` holds, read back from its ``details`` through the
    tool's validator; ``_NONE`` for an error result or one without a valid value (an
    ``after_tool_call`` hook replaced its details, say)."""
    details = message.details
    if message.is_error or not isinstance(details, Mapping) or OUTPUT_KEY not in details:
        return _NONE
    try:
        return tool.validate(details[OUTPUT_KEY])
    except ToolArgumentError:
        return _NONE


def has_output(tool: AgentTool, results: Sequence[ToolResultMessage]) -> bool:
    """Whether ``results`` (one batch's) hold a valid value of ``tool``."""
    for result in results:
        if result.tool_name == tool.name and output_value(tool, result) is not _NONE:
            return True
    return False


def last_output(messages: Sequence[AgentMessage], tool: AgentTool | None) -> Any:
    """The output a transcript ends with: the value of the last valid result of ``tool`` in
    the tool results that end ``messages`` (None when they end otherwise: with an assistant
    message, say, as a failed or aborted run does; None without a ``tool``). Looks at the
    last batch only."""
    if tool is None:
        return None
    for message in reversed(messages):
        if not isinstance(message, ToolResultMessage):
            return None
        if message.tool_name == tool.name:
            value = output_value(tool, message)
            if value is not _NONE:
                return value
    return None
