"""``@tool``: a tool's name, description and parameter schema, read from a typed function.

Every parameter of the function is a tool argument. Its annotation gives the JSON schema (the
same rules as ``json_schema_for``), a default makes it optional, and its description comes from
``Annotated[T, "description"]`` or from the docstring's ``Args:`` section (Google style), its
``Parameters`` section (NumPy style) or ``:param name:`` lines (Sphinx style). The docstring's
first paragraph is the tool's description.

The decorator returns an :class:`AgentTool` whose parameters are an attrs class made from the
signature, so arguments are coerced, validated and structured (nested attrs classes, enums,
tuples ...) before the function is called with them as keyword arguments. An ``async def`` runs
in the loop's task; a plain ``def`` in a worker thread. The return value becomes the tool result:
a ``ToolResult`` as is, a ``str`` as its text, a content block (``TextContent``,
``ImageContent``) or a list of them as the result's content (a thinking block, a tool call, or
a list mixing blocks with other values fails the call: the model would see their reprs),
anything else as JSON text with the value in ``details``.
"""

from __future__ import annotations

import inspect
import json
import re
import textwrap
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin, overload

import attrs

from .._callbacks import is_async_callable, is_generator_function
from ..events import ToolResult
from ..messages import ImageContent, TextContent, ThinkingContent, ToolCall
from ._agent_tool import (
    AgentTool,
    OnUpdate,
    ToolExecutionMode,
)
from ._approval import ApprovalPolicy

__all__ = ["parse_docstring", "result_from_value", "tool"]


@overload
def tool(fn: Callable[..., Any], /) -> AgentTool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    timeout: float | None = None,
    replay: Literal["never", "safe"] = "never",
    requires_approval: bool | ApprovalPolicy = False,
) -> Callable[[Callable[..., Any]], AgentTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    timeout: float | None = None,
    replay: Literal["never", "safe"] = "never",
    requires_approval: bool | ApprovalPolicy = False,
) -> AgentTool | Callable[[Callable[..., Any]], AgentTool]:
    """Describe a function as a tool; use as ``@tool`` or ``@tool(name=..., ...)``.

    Args:
        fn: the function (``async def`` or plain ``def``); given when used as bare ``@tool``.
        name: the tool's name for the model (default: the function's name).
        label: a human-readable label (default: the name).
        description: the tool's description (default: the docstring's first paragraph).
        execution_mode: ``"sequential"`` or ``"parallel"`` for this tool (default: the
            loop's).
        timeout: seconds one execution may take (see :class:`AgentTool`; default: the
            loop's ``tool_timeout``).
        replay: ``"safe"`` lets a durable session re-run a call a crash interrupted (an
            idempotent tool); ``"never"`` (the default) does not.
        requires_approval: True, or a policy given the validated call, makes a call wait
            for a person's decision before it runs (see :class:`AgentTool`).

    Returns:
        The :class:`AgentTool`, or (with keywords only) a decorator that makes it.

    Raises:
        TypeError: ``fn`` is not callable, or has ``*args``/``**kwargs``, positional-only
            parameters or annotations that have no JSON schema.
        ValueError: ``execution_mode`` is neither mode, ``replay`` neither value, or
            ``timeout`` not above 0.
        TypeError: ``requires_approval`` is neither a bool nor a callable.
    """

    def decorate(function: Callable[..., Any]) -> AgentTool:
        tool = _build(function, name, label, description, execution_mode)
        if timeout is None and replay == "never" and requires_approval is False:
            return tool
        if replay not in ("never", "safe"):
            raise ValueError(f"replay must be 'never' or 'safe', not {replay!r}")
        return attrs.evolve(
            tool, timeout=timeout, replay=replay, requires_approval=requires_approval
        )

    if fn is not None:
        return decorate(fn)
    return decorate


def _build(
    fn: Callable[..., Any],
    name: str | None,
    label: str | None,
    description: str | None,
    execution_mode: ToolExecutionMode | None,
) -> AgentTool:
    if not callable(fn):
        raise TypeError(f"@tool needs a function, got {fn!r}")
    if is_generator_function(fn):
        raise TypeError(
            f"@tool {getattr(fn, '__name__', fn)!r}: a generator function is not a tool; return "
            "the result (a pt.AgentTool's execute reports progress with on_update)"
        )
    if execution_mode not in (None, "sequential", "parallel"):
        raise ValueError(
            f"execution_mode must be 'sequential' or 'parallel', not {execution_mode!r}"
        )
    function_name = getattr(fn, "__name__", type(fn).__name__)
    tool_name = name or function_name
    summary, param_docs = parse_docstring(inspect.getdoc(fn) or "")
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@tool {tool_name}: *args/**kwargs cannot be tool arguments")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"@tool {tool_name}: positional-only parameter {param.name!r}")
        annotation = hints.get(param.name, Any)
        metadata: dict[str, str] = {}
        if param.name in param_docs and not _has_annotated_description(annotation):
            metadata["description"] = param_docs[param.name]
        fields[param.name] = attrs.field(
            type=annotation,
            default=attrs.NOTHING if param.default is param.empty else param.default,
            metadata=metadata,
        )
    params_cls = attrs.make_class(f"{function_name}_arguments", fields, kw_only=True, frozen=True)
    field_names = tuple(fields)

    def keywords(params: Any) -> dict[str, Any]:
        return {field: getattr(params, field) for field in field_names}

    execute: Any
    if is_async_callable(fn):

        async def execute_async(tool_call_id: str, params: Any, on_update: OnUpdate) -> ToolResult:
            return result_from_value(await fn(**keywords(params)))

        execute = execute_async
    else:

        def execute_sync(tool_call_id: str, params: Any, on_update: Any) -> ToolResult:
            return result_from_value(fn(**keywords(params)))

        execute = execute_sync
    return AgentTool(
        name=tool_name,
        label=label or tool_name,
        description=summary if description is None else description,
        parameters=params_cls,
        execute=execute,
        execution_mode=execution_mode,
    )


_BLOCKS = (TextContent, ImageContent, ThinkingContent, ToolCall)


def result_from_value(value: Any) -> ToolResult:
    """A tool function's return value as a :class:`ToolResult`.

    Raises:
        TypeError: a thinking block or a tool call, alone or in a list, or a list mixing
            content blocks with other values: not a tool result's content (the model would
            see the repr, or the private fields, of each block); or a coroutine.
    """
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult([TextContent(value)])
    if isinstance(value, TextContent | ImageContent):
        return ToolResult([value])
    if isinstance(value, _BLOCKS):
        raise TypeError(_NOT_CONTENT.format(f"a {type(value).__name__}"))
    if isinstance(value, list | tuple) and any(isinstance(item, _BLOCKS) for item in value):
        for item in value:
            if not isinstance(item, TextContent | ImageContent):
                raise TypeError(_NOT_CONTENT.format(f"a list holding a {type(item).__name__}"))
        return ToolResult(list(value))
    made = _never_ran(value)
    if made is not None:
        raise TypeError(
            f"the tool returned {made} it never ran (an await missed, or an async or generator "
            "function behind a wrapper that hides it): return the result itself"
        )
    data = attrs.asdict(value) if attrs.has(type(value)) else value
    return ToolResult([TextContent(json.dumps(data, default=str))], details=value)


def _never_ran(value: Any) -> str | None:
    """What ``value`` is when it is work a tool handed back unrun (closed here, so that no
    "never awaited" warning follows), else None."""
    if inspect.iscoroutine(value) or inspect.isgenerator(value):
        value.close()
        return "a coroutine" if inspect.iscoroutine(value) else "a generator"
    if inspect.isasyncgen(value):
        value.aclose().close()
        return "an async generator"
    return None


_NOT_CONTENT = (
    "the tool returned {}: a tool result's content is TextContent and ImageContent blocks; "
    "return a str, one such block, a list of them, or a pt.ToolResult"
)


def _has_annotated_description(annotation: Any) -> bool:
    return get_origin(annotation) is Annotated and any(
        isinstance(m, str) for m in get_args(annotation)[1:]
    )


# ---------------------------------------------------------------------------------------------
# Docstrings
# ---------------------------------------------------------------------------------------------

_ARGS_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
    }
)
_OTHER_SECTIONS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "exceptions",
        "example",
        "examples",
        "note",
        "notes",
        "attributes",
        "see also",
        "warning",
        "warnings",
        "todo",
        "references",
    }
)
_GOOGLE_HEADER = re.compile(r"(?P<title>[A-Za-z][A-Za-z ]*?)\s*:\s*")
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:\s*(?P<desc>.*)")
_NUMPY_ENTRY = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?::.*)?")
_SPHINX_PARAM = re.compile(r":param\s+(?:[^:]*\s)?(?P<name>\w+)\s*:\s*(?P<desc>.*)")
_UNDERLINE = re.compile(r"\s*-{3,}\s*")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into (first paragraph, {parameter: description}).

    Understands Google (``Args:``), NumPy (``Parameters`` + dashes) and Sphinx (``:param x:``)
    conventions; multi-line descriptions are joined with single spaces.
    """
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    params: dict[str, str] = {}
    index = 0
    in_summary = True
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        numpy_title = (
            stripped.lower()
            if stripped and index + 1 < len(lines) and _UNDERLINE.fullmatch(lines[index + 1])
            else None
        )
        google = _GOOGLE_HEADER.fullmatch(line)
        google_title = google["title"].lower() if google else None
        if numpy_title is not None:
            in_summary = False
            index += 2
            body: list[str] = []
            while index < len(lines) and not (
                lines[index].strip()
                and index + 1 < len(lines)
                and _UNDERLINE.fullmatch(lines[index + 1])
            ):
                body.append(lines[index])
                index += 1
            if numpy_title in _ARGS_SECTIONS:
                params.update(_entries(body, _NUMPY_ENTRY, description_on_first_line=False))
            continue
        if google_title in _ARGS_SECTIONS or google_title in _OTHER_SECTIONS:
            in_summary = False
            index += 1
            body = []
            while index < len(lines) and (
                not lines[index].strip() or lines[index][:1] in (" ", "\t")
            ):
                body.append(lines[index])
                index += 1
            if google_title in _ARGS_SECTIONS:
                params.update(_entries(body, _GOOGLE_ENTRY, description_on_first_line=True))
            continue
        sphinx = _SPHINX_PARAM.fullmatch(stripped)
        if sphinx:
            in_summary = False
            parts = [sphinx["desc"].strip()]
            index += 1
            while index < len(lines) and lines[index][:1] in (" ", "\t") and lines[index].strip():
                parts.append(lines[index].strip())
                index += 1
            params[sphinx["name"]] = " ".join(p for p in parts if p)
            continue
        if in_summary:
            if stripped:
                summary.append(stripped)
            elif summary:
                in_summary = False
        index += 1
    return " ".join(summary), params


def _entries(
    body: list[str], entry: re.Pattern[str], *, description_on_first_line: bool
) -> dict[str, str]:
    """Entries of one parameters section: a name line at the base indent, then indented text."""
    text = textwrap.dedent("\n".join(body))
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[:1] not in (" ", "\t"):
            match = entry.fullmatch(line.strip())
            if match:
                current = found.setdefault(match["name"], [])
                if description_on_first_line and match["desc"].strip():
                    current.append(match["desc"].strip())
                continue
        if current is not None:
            current.append(line.strip())
    return {name: " ".join(parts) for name, parts in found.items()}
