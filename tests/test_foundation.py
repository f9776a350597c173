"""Models, options, the error hierarchy and the data model (the exports: tests/test_exports.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pi_trio as pt

# The drawing of the error tree is _errors's module docstring, which no export carries.
from pi_trio import _errors

# No public seam reaches the partial-JSON parser (faux sends a tool call's arguments in one
# delta).
from pi_trio.providers._partial_json import parse_partial_json


def test_get_model_and_unknown_ids() -> None:
    model = pt.get_model("openai", "gpt-4o-mini")
    assert model.api == "openai-responses"
    assert model.cost.input == 0.15
    with pytest.raises(pt.ProviderNotFoundError, match="known: "):
        pt.get_model("openai", "gpt-0")
    with pytest.raises(pt.ProviderNotFoundError, match="unknown provider"):
        pt.get_model("nobody", "x")


def test_env_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    assert pt.get_env_api_key("anthropic") == "sk-ant"
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "oauth")
    assert pt.get_env_api_key("anthropic") == "oauth"
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert pt.get_env_api_key("google") is None


def test_api_key_never_in_repr() -> None:
    options = pt.StreamOptions(api_key="sk-secret-123")
    assert "sk-secret" not in repr(options)


def test_error_hierarchy() -> None:
    for exc in (pt.AgentBusyError, pt.WireFormatError, pt.ToolArgumentError, pt.ContinueError):
        assert issubclass(exc, pt.PiError)


def test_error_tree_in_the_docstring_draws_every_error_class() -> None:
    """``_errors``'s docstring draws the hierarchy: every exception class of the module is a
    line of it, with its built-in base in parentheses, so the drawing cannot drift."""
    drawn: dict[str, str] = {}
    for line in (_errors.__doc__ or "").splitlines():
        found = re.match(r"[\s│]+[├└]── (\w+)(?: \((\w+)\))?(?:\s|$)", line)
        if found:
            drawn[found[1]] = found[2] or ""
    # the class statements of the module's source (``__module__`` is fixed up to ``pi_trio``)
    tree = ast.parse(Path(_errors.__file__).read_text(encoding="utf-8"))
    defined = {
        node.name: getattr(_errors, node.name)
        for node in tree.body
        if isinstance(node, ast.ClassDef) and issubclass(getattr(_errors, node.name), BaseException)
    }
    missing = sorted(set(defined) - {"PiError"} - set(drawn))
    assert not missing, f"classes of pi_trio._errors not in its docstring's tree: {missing}"
    assert set(drawn) <= set(defined), "the tree draws a class the module does not define"
    for name, base in drawn.items():
        builtin = [b.__name__ for b in defined[name].__bases__ if b is not _errors.PiError]
        assert ([base] if base else []) == builtin, name
        assert issubclass(defined[name], _errors.PiError), name


def test_text_accumulates_without_joining_per_delta() -> None:
    block = pt.TextContent()
    for _ in range(1000):
        block.append("ab")
    # ``_parts`` is private: reading it is the one way to see that nothing was joined per delta
    # without timing the appends (timings are never test assertions)
    assert len(block._parts) == 1001  # nothing joined yet
    assert block.text == "ab" * 1000
    assert block._parts is None  # joined once: the block holds the string alone
    block.append("c")
    assert block.text.endswith("abc")
    assert block == pt.TextContent("ab" * 1000 + "c")


def test_assistant_message_tool_calls() -> None:
    message = pt.AssistantMessage(
        content=[pt.TextContent("x"), pt.ToolCall("1", "a"), pt.ToolCall("2", "b")],
        api="a",
        provider="p",
        model="m",
    )
    assert [c.id for c in message.tool_calls] == ["1", "2"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": "hel', {"a": 1, "b": "hel"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": 1, "b"', {"a": 1}),
        ('{"a": {"b": tr', {"a": {}}),
        ("", {}),
        ("[1,2]", {}),
        ('{"a": "x\\', {"a": "x"}),
    ],
)
def test_partial_json(text: str, expected: dict[str, object]) -> None:
    assert parse_partial_json(text) == expected


def test_events_compare_and_hash_by_value_and_keep_pi_type_strings() -> None:
    message = pt.AssistantMessage([], "faux", "faux", "faux-1")
    assert pt.TextDelta(0, "a", message) == pt.TextDelta(0, "a", message)
    assert pt.TextDelta(0, "a", message) != pt.TextDelta(0, "b", message)
    assert pt.TextDelta(0, "a", message) != pt.ThinkingDelta(0, "a", message)
    assert hash(pt.TurnStart()) == hash(pt.TurnStart())
    assert {pt.ToolExecutionStart("c1", "t", 1), pt.ToolExecutionStart("c1", "t", 1)} == {
        pt.ToolExecutionStart("c1", "t", 1)
    }
    assert (pt.TextDelta.type, pt.MessageUpdate.type, pt.ToolExecutionEnd.type) == (
        "text_delta",
        "message_update",
        "tool_execution_end",
    )
    match pt.MessageUpdate(message, pt.TextDelta(0, "a", message)):
        case pt.MessageUpdate(assistant_message_event=pt.TextDelta(delta=delta)):
            assert delta == "a"
        case _:
            raise AssertionError("no match")
