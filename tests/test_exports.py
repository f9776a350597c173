"""The public face: DESIGN.md section 2's names are exported, and report module ``pi_trio``."""

from __future__ import annotations

import collections.abc
import pickle
import re
import types
import typing
from pathlib import Path

import attrs
import pytest

import pi_trio as pt

DESIGN = Path(__file__).resolve().parents[2] / "shared" / "DESIGN.md"
if not DESIGN.exists():  # a worktree next to /work/shared, or the main checkout
    DESIGN = Path("/work/shared/DESIGN.md")

# Every public name DESIGN.md section 2 writes, ``pt.X`` or in its lists of events.
SECTION_2 = frozenset({
    "TextContent", "ThinkingContent", "ImageContent", "ToolCall", "Usage", "UserMessage",
    "AssistantMessage", "ToolResultMessage",
    "StreamStart", "TextStart", "TextDelta", "TextEnd", "ThinkingStart", "ThinkingDelta",
    "ThinkingEnd", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "StreamDone", "StreamError",
    "AgentStart", "AgentEnd", "TurnStart", "TurnEnd", "MessageStart", "MessageUpdate",
    "MessageEnd", "ToolExecutionStart", "ToolExecutionUpdate", "ToolExecutionEnd",
    "Model", "Context", "StreamOptions", "to_json", "from_json",
    "AgentTool", "ToolResult", "tool",
    "BeforeToolCallContext", "BeforeToolCallResult", "AfterToolCallContext",
    "AfterToolCallResult", "ShouldStopAfterTurnContext",
    "AgentContext", "AgentLoopConfig", "run_agent_loop", "run_agent_loop_continue", "agent_loop",
    "Agent", "AgentState", "AgentBusyError",
    "get_model", "stream_simple", "complete_simple", "faux",
})  # fmt: skip
# Written in section 2 in a shortened form.
SHORTENED = {"ThinkingDelta": "ThinkingStart/Delta", "ThinkingEnd": "Delta/End",
             "ToolCallDelta": "ToolCallStart/Delta", "ToolCallEnd": "Delta/End"}  # fmt: skip
# Names of section 2 that pi_trio does not have yet (printed by the test; none today).
NOT_YET: frozenset[str] = frozenset()


def _section_2() -> str:
    text = DESIGN.read_text()
    return text[text.index("## 2.") : text.index("## 3.")]


@pytest.fixture(scope="module")
def section_2() -> str:
    if not DESIGN.exists():
        pytest.skip(f"{DESIGN} not found")
    return _section_2()


def test_the_list_is_section_2(section_2: str) -> None:
    written = set(re.findall(r"\bpt\.([A-Za-z_]\w*)", section_2))
    assert written <= SECTION_2, f"in DESIGN.md section 2 but not listed: {written - SECTION_2}"
    words = set(re.findall(r"\w+", section_2))
    unknown = {n for n in SECTION_2 if n not in words and SHORTENED.get(n, "@") not in section_2}
    assert not unknown, f"listed but not in DESIGN.md section 2: {unknown}"


def test_section_2_names_are_exported() -> None:
    missing = sorted(SECTION_2 - set(pt.__all__) - NOT_YET)
    assert not missing, f"DESIGN.md section 2 names missing from pi_trio.__all__: {missing}"
    arrived = sorted(n for n in NOT_YET if hasattr(pt, n))
    assert not arrived, f"exists now: export it and delete it from NOT_YET: {arrived}"
    if NOT_YET:
        print(f"DESIGN.md section 2 names not yet in pi_trio: {sorted(NOT_YET)}")


def test_all_is_sorted_unique_and_importable() -> None:
    assert list(pt.__all__) == sorted(pt.__all__)
    assert len(set(pt.__all__)) == len(pt.__all__)
    namespace: dict[str, object] = {}
    exec("from pi_trio import *", namespace)
    assert set(pt.__all__) <= set(namespace)


def _defined_in_pi_trio(obj: object) -> bool:
    return isinstance(obj, type | types.FunctionType) and obj.__module__.startswith("pi_trio")


@pytest.mark.parametrize(
    ("module", "names"),
    [(pt, pt.__all__), (pt.proxy, [n for n in pt.proxy.__all__ if n not in pt.__all__])],
    ids=["pi_trio", "pi_trio.proxy"],
)
def test_exported_names_report_their_public_module(
    module: types.ModuleType, names: list[str]
) -> None:
    wrong = []
    for name in names:
        obj = getattr(module, name)
        if not _defined_in_pi_trio(obj):
            continue
        if (obj.__module__, obj.__qualname__) != (module.__name__, name):
            wrong.append(f"{name}: {obj.__module__}.{obj.__qualname__}")
    assert not wrong, wrong
    assert repr(pt.Agent) == "<class 'pi_trio.Agent'>"


def test_methods_report_the_exported_class() -> None:
    assert (pt.Agent.prompt.__module__, pt.Agent.prompt.__qualname__) == ("pi_trio", "Agent.prompt")
    assert pt.TextContent.text.fget.__qualname__ == "TextContent.text"  # type: ignore[attr-defined]
    assert pt.proxy.ProxyDone.__module__ == "pi_trio.proxy"


def test_annotations_still_resolve_after_the_fix_up() -> None:
    """Annotations name private aliases of the defining modules (``ToolResultContent``):
    they are resolved before ``__module__`` changes, so type hints and attrs fields work."""
    for name in pt.__all__:
        obj = getattr(pt, name)
        if isinstance(obj, type) and obj.__module__ == "pi_trio":
            typing.get_type_hints(obj)  # raises NameError when a name is not found
            if attrs.has(obj):
                assert not [f.name for f in attrs.fields(obj) if isinstance(f.type, str)], name


def test_a_subclass_defined_later_resolves_its_hints() -> None:
    """``AgentContext`` names ``AgentTool`` only under TYPE_CHECKING in its own module."""

    @attrs.define
    class Extended(pt.AgentContext):
        note: str = ""

    hints = typing.get_type_hints(Extended)
    assert hints["note"] is str
    assert hints["tools"] == collections.abc.Sequence[pt.AgentTool]


# Records the loop, the wire format and the providers know exactly: ``@typing.final``.
FINAL = frozenset({
    "TextContent", "ThinkingContent", "ImageContent", "ToolCall", "Usage", "UsageCost",
    "UserMessage", "AssistantMessage", "ToolResultMessage", "Tool", "Context",
    "Model", "ModelCost", "ToolResult",
    "StreamStart", "TextStart", "TextDelta", "TextEnd", "ThinkingStart", "ThinkingDelta",
    "ThinkingEnd", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "StreamDone", "StreamError",
    "AgentStart", "AgentEnd", "TurnStart", "TurnEnd", "MessageStart", "MessageUpdate",
    "MessageEnd", "ToolExecutionStart", "ToolExecutionUpdate", "ToolExecutionEnd",
})  # fmt: skip
# Meant to be derived from or implemented: the error family, the custom-message protocol.
OPEN = frozenset({"PiError", "WireFormatError", "AgentBusyError", "ContinueError",
                  "ToolArgumentError", "ProviderNotFoundError", "CustomMessage"})  # fmt: skip


def test_records_are_final_and_bases_are_not() -> None:
    assert sorted(n for n in FINAL if not getattr(getattr(pt, n), "__final__", False)) == []
    assert sorted(n for n in OPEN if getattr(getattr(pt, n), "__final__", False)) == []


def test_exported_records_and_errors_pickle() -> None:
    message = pt.ToolResultMessage("c1", "echo", [pt.TextContent("x")], timestamp=1)
    assert pickle.loads(pickle.dumps(message)) == message
    error = pickle.loads(pickle.dumps(pt.AgentBusyError("busy")))
    assert type(error) is pt.AgentBusyError and str(error) == "busy"
