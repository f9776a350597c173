"""The model's view of the transcript, kept incrementally: the transcript list itself while it
holds only messages for the model (no second list of every message per running agent), a
filtered copy once it holds an application's own messages; changes made to the live transcript
mid-run are what the next request sees."""

from __future__ import annotations

import gc

import attrs
import trio

import pi_trio as pt
from pi_trio.loop._transcript import Transcript

from .support import make_scripted_agent


@attrs.define
class Note:
    role: str = "note"
    text: str = ""


def _lists_held(transcript: Transcript) -> int:
    return len({id(ref) for ref in gc.get_referents(transcript) if type(ref) is list})


def test_a_transcript_of_model_messages_is_its_own_view() -> None:
    messages: list[pt.AgentMessage] = [pt.UserMessage("one")]
    transcript = Transcript(messages, incremental_llm=True)
    assert _lists_held(transcript) == 3  # messages, new_messages, taken: no copy
    reply = pt.faux.assistant_message("two")
    transcript.end(reply)
    assert list(transcript.llm_view() or ()) == [messages[0], reply]
    assert _lists_held(transcript) == 3


def test_a_note_makes_the_view_a_filtered_copy() -> None:
    first = pt.UserMessage("one")
    messages: list[pt.AgentMessage] = [first]
    transcript = Transcript(messages, incremental_llm=True)
    view = transcript.llm_view()
    transcript.end(Note(text="for the app only"))
    second = pt.UserMessage("two")
    transcript.end(second)
    assert list(transcript.llm_view() or ()) == [first, second]
    assert list(view or ()) == [first]  # a view given out before stays as it was
    assert len(messages) == 3
    # a transcript that starts with a note is filtered from the start
    started = Transcript([Note(), first], incremental_llm=True)
    assert list(started.llm_view() or ()) == [first]


def test_messages_added_to_the_live_transcript_are_seen_filtered() -> None:
    first = pt.UserMessage("one")
    messages: list[pt.AgentMessage] = [first]
    transcript = Transcript(messages, incremental_llm=True)
    added = pt.UserMessage("added by a listener")
    messages += [Note(), added]  # not through the run
    assert list(transcript.llm_view() or ()) == [first, added]
    reply = pt.faux.assistant_message("ok")
    transcript.end(reply)
    assert list(transcript.llm_view() or ()) == [first, added, reply]


async def test_a_run_requests_without_the_notes_a_listener_adds() -> None:
    answers = [
        pt.faux.assistant_message([pt.faux.tool_call("noop", {}, id="c-1")]),
        pt.faux.assistant_message("done"),
    ]

    async def noop(tool_call_id: str, params: object, on_update: object) -> pt.ToolResult:
        return pt.ToolResult([pt.TextContent("ok")])

    tool = pt.AgentTool("noop", "noop", "does nothing", {"type": "object"}, noop)
    agent, scripted = make_scripted_agent(answers, [tool])

    def on_event(event: pt.AgentEvent) -> None:
        if event.type == "turn_end" and len(agent.state.messages) == 3:
            agent.state.messages.append(Note(text="seen by the app"))

    agent.subscribe(on_event)
    with trio.fail_after(5):
        await agent.prompt("go")
    assert agent.state.error_message is None
    second = scripted.calls[1].context.messages
    assert [m.role for m in second] == ["user", "assistant", "toolResult"]
    assert any(isinstance(m, Note) for m in agent.state.messages)


# --- transform_context and convert_to_llm act on a copy made for the request -------------------


def _texts(messages: object) -> list[str]:
    out = []
    for message in messages:  # type: ignore[attr-defined]
        content = message.content
        out.append(
            content
            if isinstance(content, str)
            else "".join(getattr(block, "text", "") for block in content)
        )
    return out


async def test_hooks_that_mutate_the_list_they_are_given_leave_the_transcript_alone() -> None:
    from .support import make_scripted_agent

    def transform(messages: list[pt.AgentMessage]) -> list[pt.AgentMessage]:
        messages.append(pt.UserMessage("added by transform_context"))  # in place
        del messages[0]
        return messages

    async def convert(messages: list[pt.AgentMessage]) -> list[pt.Message]:
        llm = pt.default_convert_to_llm(messages)
        messages.clear()  # in place: the transcript must not notice
        messages.append(pt.UserMessage("added by convert_to_llm"))
        return llm

    for hooks in (
        {"transform_context": transform},
        {"convert_to_llm": convert},
        {"transform_context": transform, "convert_to_llm": convert},
    ):
        agent, scripted = make_scripted_agent(
            [pt.faux.assistant_message("first"), pt.faux.assistant_message("second")], **hooks
        )
        await agent.prompt("one")
        await agent.prompt("two")
        assert _texts(agent.state.messages) == ["one", "first", "two", "second"], hooks
        seen = [_texts(call.context.messages) for call in scripted.calls]
        if "transform_context" in hooks:  # the model saw the hook's view, not the transcript's
            assert seen[1] == ["first", "two", "added by transform_context"]
        else:
            assert seen[1] == ["one", "first", "two"]
