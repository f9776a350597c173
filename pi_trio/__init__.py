"""pi_trio: a Trio-native agent loop (pi's agent core with structured concurrency).

The public API is what this module exports; the submodules' private names may change.
Like trio, the exported classes and functions report ``__module__ == "pi_trio"`` (and the
exports of :mod:`pi_trio.proxy` report ``"pi_trio.proxy"``), so reprs, tracebacks, pickles and
the API reference name them where users import them from (see :func:`_fixup_module_metadata`).

What a run does not need is imported on first use: the subpackages ``mcp``, ``proxy``,
``sessions``, ``testing`` and ``wire`` (and the names exported from them) are loaded when first
touched (``pt.SessionStore``, ``import pi_trio.proxy``, ``from pi_trio import to_json``), and
so are the third-party stacks: the HTTP stack (httpx2 where installed, else httpx) with the
first default HTTP client (a provider's first request), jsonschema and cattrs with the first
tool built. So ``import pi_trio`` leaves a smaller heap for the garbage collector to walk in a
service that runs many agents.
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

import attrs as _attrs

from ._errors import (
    AgentBusyError,
    ContinueError,
    EventsOverflowError,
    OutputError,
    PiError,
    PiSessionFileError,
    ProviderError,
    ProviderNotFoundError,
    SessionBusyError,
    SessionExistsError,
    SessionLogError,
    SessionNotFoundError,
    SessionStoreError,
    ToolArgumentError,
    WireFormatError,
)
from ._version import __version__
from .agent import (
    Agent,
    AgentSettings,
    AgentState,
    CheckingRecorder,
    EventsReceiver,
    QueuedMessage,
    Recorder,
)
from .coding_messages import (
    BashExecutionMessage,
    BranchSummary,
    CompactionSummary,
    ExtensionMessage,
)
from .compaction import Compaction, is_context_overflow
from .events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    BudgetReached,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    QueueUpdate,
    StreamDone,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolApprovalRequest,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from .loop import (
    AgentLoopConfig,
    EventSink,
    PrepareRequestContext,
    RequestUpdate,
    RunSink,
    ShouldStopAfterTurnContext,
    TurnUpdate,
    agent_loop,
    agent_loop_continue,
    default_convert_to_llm,
    run_agent_loop,
    run_agent_loop_continue,
)
from .messages import (
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    Context,
    CustomMessage,
    ImageContent,
    Message,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageCost,
    UserMessage,
)
from .models import Model, ModelCost, ThinkingLevel, get_env_api_key, get_model, list_models
from .providers import (
    StreamFn,
    StreamOptions,
    ThinkingBudgets,
    complete_simple,
    faux,
    register_api,
    stream_simple,
)
from .subagents import subagent_tool
from .system_messages import collapse_system_messages, current_system
from .tools import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentTool,
    ApprovalPolicy,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ToolDecision,
    json_schema_for,
    output_json,
    output_tool,
    tool,
    tool_thread_limiter,
)

if _typing.TYPE_CHECKING:  # imported on first use (see _LAZY below)
    from . import mcp, proxy, sessions, testing, wire
    from .proxy import ProxyServer, ProxyStream, serve_proxy, stream_proxy
    from .sessions import (
        SessionEntry,
        SessionStore,
        open_session_store,
        repair_transcript,
        serve_sessions,
    )
    from .wire import from_json, register_message_type, to_json

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentContext",
    "AgentEnd",
    "AgentEvent",
    "AgentLoopConfig",
    "AgentMessage",
    "AgentSettings",
    "AgentStart",
    "AgentState",
    "AgentTool",
    "ApprovalPolicy",
    "AssistantContent",
    "AssistantMessage",
    "BashExecutionMessage",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "BranchSummary",
    "BudgetReached",
    "CheckingRecorder",
    "Compaction",
    "CompactionEnd",
    "CompactionStart",
    "CompactionSummary",
    "Context",
    "ContinueError",
    "CustomMessage",
    "EventSink",
    "EventsOverflowError",
    "EventsReceiver",
    "ExtensionMessage",
    "ImageContent",
    "Message",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "Model",
    "ModelCost",
    "OutputError",
    "PiError",
    "PiSessionFileError",
    "PrepareRequestContext",
    "ProviderError",
    "ProviderNotFoundError",
    "ProxyServer",
    "ProxyStream",
    "QueueUpdate",
    "QueuedMessage",
    "Recorder",
    "RequestUpdate",
    "RunSink",
    "SessionBusyError",
    "SessionEntry",
    "SessionExistsError",
    "SessionLogError",
    "SessionNotFoundError",
    "SessionStore",
    "SessionStoreError",
    "ShouldStopAfterTurnContext",
    "StopReason",
    "StreamDone",
    "StreamError",
    "StreamEvent",
    "StreamFn",
    "StreamOptions",
    "StreamStart",
    "SystemMessage",
    "TextContent",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingBudgets",
    "ThinkingContent",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingLevel",
    "ThinkingStart",
    "Tool",
    "ToolApprovalRequest",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolDecision",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolResult",
    "ToolResultMessage",
    "TurnEnd",
    "TurnStart",
    "TurnUpdate",
    "Usage",
    "UsageCost",
    "UserMessage",
    "WireFormatError",
    "__version__",
    "agent_loop",
    "agent_loop_continue",
    "collapse_system_messages",
    "complete_simple",
    "current_system",
    "default_convert_to_llm",
    "faux",
    "from_json",
    "get_env_api_key",
    "get_model",
    "is_context_overflow",
    "json_schema_for",
    "list_models",
    "mcp",
    "open_session_store",
    "output_json",
    "output_tool",
    "proxy",
    "register_api",
    "register_message_type",
    "repair_transcript",
    "run_agent_loop",
    "run_agent_loop_continue",
    "serve_proxy",
    "serve_sessions",
    "sessions",
    "stream_proxy",
    "stream_simple",
    "subagent_tool",
    "testing",
    "to_json",
    "tool",
    "tool_thread_limiter",
    "wire",
]


def _resolve_annotations(cls: type, extra: dict[str, object]) -> None:
    """Replace ``cls``'s string annotations by the objects they name, in its own module.

    With ``from __future__ import annotations`` every annotation is a string that
    ``typing.get_type_hints`` (and through it ``attrs.resolve_types`` and cattrs) evaluates in
    ``sys.modules[cls.__module__]``. Once ``__module__`` says "pi_trio", names of the defining
    module that pi_trio does not export (``ToolResultContent``, ``httpx``, ...) would no longer
    be found, so they are resolved here, while ``__module__`` still names the defining module.
    Names a module imports only for type checking are looked up in ``extra`` (pi_trio's own
    namespace), then among the imported modules (``httpx``). A class whose annotations still
    do not resolve is left as it was (``tests/test_exports.py`` fails on it).
    """
    own = cls.__dict__.get("__annotations__")  # noqa: RUF063 (the dict itself, to update)
    if not own:
        return
    localns: dict[str, object] | None = None
    for _ in range(8):
        try:
            hints = _typing.get_type_hints(cls, localns=localns, include_extras=True)
            break
        except NameError as exc:
            if localns is None:  # pi_trio's names, the defining module's first
                localns = {**extra, **vars(_sys.modules[cls.__module__])}
            elif exc.name in _sys.modules and exc.name not in localns:  # e.g. httpx
                localns[exc.name] = _sys.modules[exc.name]
            else:
                return
    else:
        return
    for name in own:
        if name in hints:
            own[name] = hints[name]
    if _attrs.has(cls):
        _attrs.resolve_types(cls, localns=localns)  # the fields' types, as cattrs reads them


def _fixup_module_metadata(
    module_name: str, names: list[str], namespace: dict[str, object]
) -> None:
    """Make the exported classes and functions of ``namespace`` report ``module_name``.

    trio's ``fixup_module_metadata``: for every exported object defined in a pi_trio module,
    ``__module__`` becomes ``module_name``; for classes, their methods too, with
    ``__qualname__`` naming the class as exported. Objects defined elsewhere are left alone.
    Annotations are resolved first (:func:`_resolve_annotations`), for every object before any
    ``__module__`` changes, since resolving a class walks its bases' modules.
    """
    extra = {k: v for k, v in namespace.items() if not k.startswith("__")}
    exported = [(name, namespace[name]) for name in names]
    for _, obj in exported:
        if isinstance(obj, type) and getattr(obj, "__module__", "").startswith("pi_trio."):
            _resolve_annotations(obj, extra)
    seen: set[int] = set()

    def fix_one(qualname: str, name: str, obj: object) -> None:
        if id(obj) in seen or not isinstance(obj, type | _types.FunctionType):
            return
        seen.add(id(obj))
        if not obj.__module__.startswith("pi_trio."):
            return
        defined_as = obj.__qualname__
        obj.__module__ = module_name
        obj.__name__ = name
        obj.__qualname__ = qualname
        if isinstance(obj, type):
            for attr_name, attr_value in list(obj.__dict__.items()):
                if isinstance(attr_value, staticmethod | classmethod):
                    attr_value = attr_value.__func__
                elif isinstance(attr_value, property):
                    attr_value = attr_value.fget
                # only what the class itself defines (not another class stored on it)
                if getattr(attr_value, "__qualname__", "").startswith(defined_as + "."):
                    fix_one(f"{qualname}.{attr_name}", attr_name, attr_value)

    for name, obj in exported:
        fix_one(name, name, obj)


# --- what is imported on first use ---------------------------------------------------------

_LAZY_MODULES = frozenset({"mcp", "proxy", "sessions", "testing", "wire"})
_LAZY: dict[str, str] = {
    **dict.fromkeys(("ProxyServer", "ProxyStream", "serve_proxy", "stream_proxy"), "proxy"),
    **dict.fromkeys(
        (
            "SessionEntry",
            "SessionStore",
            "open_session_store",
            "repair_transcript",
            "serve_sessions",
        ),
        "sessions",
    ),
    **dict.fromkeys(("from_json", "register_message_type", "to_json"), "wire"),
}
"""Exported names that live in a lazily imported subpackage, and which one."""


def __getattr__(name: str) -> object:
    """The lazily imported subpackages and their exported names, on first use."""
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    subpackage = _LAZY.get(name)
    if subpackage is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _importlib.import_module(f"{__name__}.{subpackage}")
    return globals()[name]  # put there by _Package.__setattr__ -> _loaded


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _loaded(subpackage: str, module: _types.ModuleType) -> None:
    """``subpackage`` has just been imported (however it was): export its names from here,
    fixed up like the others."""
    names = [name for name, owner in _LAZY.items() if owner == subpackage]
    namespace = globals()
    for name in names:
        namespace[name] = getattr(module, name)
    _fixup_module_metadata(__name__, names, namespace)
    if subpackage == "proxy":
        own = [name for name in module.__all__ if name not in __all__]
        _fixup_module_metadata(module.__name__, own, vars(module))


class _Package(_types.ModuleType):
    """pi_trio's module type: the import system sets a subpackage as an attribute of its
    parent once it is imported; for the lazy ones that is when their names are exported."""

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, value)
        if name in _LAZY_MODULES and isinstance(value, _types.ModuleType):
            _loaded(name, value)


_fixup_module_metadata(__name__, [n for n in __all__ if n in globals()], globals())
_sys.modules[__name__].__class__ = _Package
for _name in _LAZY_MODULES:  # imported already (by a module imported above)
    if f"{__name__}.{_name}" in _sys.modules:
        _loaded(_name, _sys.modules[f"{__name__}.{_name}"])
del _name
