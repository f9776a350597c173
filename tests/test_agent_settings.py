"""``pt.AgentSettings``: every keyword option of ``pt.Agent`` in one record, each option an
attribute of the agent over it, and a bad value refused where it is set."""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any
from unittest import mock

import attrs
import pytest
import trio

import pi_trio as pt

from .support import SLEEP, NullRecorder, faux, make_agent, sleeps


def _noop(*args: Any) -> None:
    return None


def test_every_keyword_option_of_agent_is_a_setting_and_an_attribute() -> None:
    keywords = [
        name
        for name, parameter in inspect.signature(pt.Agent).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    fields = [field.name for field in attrs.fields(pt.AgentSettings)]
    assert keywords == fields
    agent = pt.Agent(max_turns=3, session_id="s-1", finish_turn=_noop, tool_timeout=2.5)
    for name in fields:
        assert getattr(agent, name) == getattr(agent.settings, name), name
    assert (agent.max_turns, agent.session_id, agent.tool_timeout) == (3, "s-1", 2.5)


BAD_VALUES = [
    ("max_parallel_tools", 0, ValueError, "max_parallel_tools must be >= 1 or None, got 0"),
    ("max_parallel_tools", 1.5, TypeError, "max_parallel_tools must be an int >= 1"),
    ("max_turns", True, TypeError, "max_turns must be an int >= 1 or None, got True"),
    ("max_tool_calls", -1, ValueError, "max_tool_calls must be >= 1"),
    ("max_total_tokens", "100", TypeError, "max_total_tokens must be an int"),
    ("max_cost", 0, ValueError, "max_cost must be > 0 dollars or None, got 0"),
    ("tool_timeout", 0, ValueError, "tool_timeout must be > 0 seconds or None, got 0"),
    ("tool_timeout", float("nan"), ValueError, "tool_timeout must be > 0 seconds"),
    ("close_timeout", -1, ValueError, "close_timeout must be a number of seconds >= 0, got -1"),
    ("close_timeout", None, TypeError, "close_timeout must be a number of seconds >= 0"),
    ("steering_policy", "sometimes", ValueError, 'one of "after_batch", "at_tool_boundary"'),
    ("tool_execution", "both", ValueError, 'tool_execution must be one of "parallel"'),
    ("steering_mode", "many", ValueError, 'steering_mode must be one of "one-at-a-time", "all"'),
    ("follow_up_mode", None, ValueError, "follow_up_mode must be one of"),
    ("session_id", 42, TypeError, "session_id must be a str or None, got 42"),
    ("before_tool_call", "hook", TypeError, "before_tool_call must be a function"),
    ("stream_fn", 3, TypeError, "stream_fn must be a function (or an async function) or None"),
    ("stream_options", {"temperature": 0}, TypeError, "stream_options"),
    ("recorder", object(), TypeError, "recorder must be a pt.Recorder"),
]


@pytest.mark.parametrize(("option", "value", "error", "text"), BAD_VALUES)
def test_a_bad_value_raises_where_it_is_set_and_changes_nothing(
    option: str, value: Any, error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=re.escape(text)):
        pt.Agent(**{option: value})
    agent = pt.Agent()
    before = agent.settings
    with pytest.raises(error):
        setattr(agent, option, value)
    with pytest.raises(error):
        agent.settings = agent.settings.evolve(**{option: value})
    assert agent.settings is before


def test_settings_are_replaced_whole_and_refuse_anything_else() -> None:
    agent = pt.Agent()
    with pytest.raises(TypeError, match=r"settings must be a pt\.AgentSettings, got a dict"):
        agent.settings = {"max_turns": 3}  # type: ignore[assignment]
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_turn'"):
        agent.settings.evolve(max_turn=3)
    shared = pt.AgentSettings(max_turns=2, steering_mode="all")
    agent.settings = shared
    other = pt.Agent(steering_mode="all", max_turns=2)
    assert agent.settings is shared and other.settings == shared
    agent.max_turns = 5
    assert shared.max_turns == 2 and agent.settings.max_turns == 5


async def test_queue_modes_apply_at_once() -> None:
    agent = make_agent([pt.faux.assistant_message("took them")])
    agent.steer("one")
    agent.steer("two")
    agent.steering_mode = "all"
    assert len(agent.peek_queued_messages()) == 2
    agent.settings = agent.settings.evolve(steering_mode="one-at-a-time")
    assert len(agent.peek_queued_messages()) == 1


async def test_a_change_during_a_run_is_for_the_next_run(autojump_clock: Any) -> None:
    script = [sleeps(1), sleeps(1), sleeps(1), pt.faux.assistant_message("done")] * 2
    agent = make_agent(script, [SLEEP])
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        agent.max_turns = 1  # the run started without a budget: it goes on to its end
    assert agent.state.messages[-1].stop_reason == "stop"  # type: ignore[union-attr]
    assert agent.state.error_message is None
    await agent.prompt("again")  # this run has the budget: it ends after one turn
    assert agent.state.error_message is not None
    assert "max_turns=1" in agent.state.error_message


async def test_a_bad_setting_makes_continue_raise_without_losing_the_steered_message() -> None:
    """A bad setting is refused where it is set, so ``continue_()`` never takes the steering
    queue's message for a run that cannot start (it used to, and lost it)."""
    agent = make_agent([faux.assistant_message("first"), faux.assistant_message("second")])
    await agent.prompt("go")
    agent.steer(pt.UserMessage("steered"))
    with pytest.raises(ValueError, match="max_parallel_tools"):
        agent.max_parallel_tools = 0
    assert agent.has_queued_messages() and agent.max_parallel_tools is None
    await agent.continue_()
    assert [getattr(m, "content", None) for m in agent.state.messages[-2:]] == [
        "steered",
        faux.assistant_message("second").content,
    ]


async def test_a_bad_steering_policy_does_not_wedge_the_agent() -> None:
    agent = make_agent([faux.assistant_message("x"), faux.assistant_message("y")], ())
    with pytest.raises(ValueError, match="steering_policy"):
        agent.steering_policy = "sometimes"  # type: ignore[assignment]
    assert agent.steering_policy == "after_batch"  # the refused value was never taken
    await agent.prompt("hi")
    assert not agent.is_running
    await agent.prompt("again")


# --- what a settings record may not do: drop or take a recorder, hide under a subclass --------


def test_a_new_record_keeps_the_recorder_and_never_takes_another_agents() -> None:
    recorder = NullRecorder()
    durable = pt.Agent(recorder=recorder, max_turns=3)
    with pytest.raises(ValueError, match="would drop this agent's recorder"):
        durable.settings = pt.AgentSettings(max_turns=5)
    plain = pt.Agent()
    with pytest.raises(ValueError, match="carry another recorder"):
        plain.settings = durable.settings  # a recorder serves one agent
    assert durable.recorder is recorder and plain.recorder is None
    durable.settings = durable.settings.evolve(max_turns=5)  # evolve keeps it
    assert (durable.recorder, durable.max_turns) == (recorder, 5)
    plain.settings = durable.settings.evolve(recorder=None)
    durable.recorder = None  # detached on purpose
    assert durable.recorder is None and durable.max_turns == plain.max_turns == 5


async def test_the_recorder_changes_between_runs_only(autojump_clock: Any) -> None:
    agent = make_agent([sleeps(1), faux.assistant_message("done")])
    recorder = NullRecorder()
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        with pytest.raises(pt.AgentBusyError, match="recorder cannot change during a run"):
            agent.recorder = recorder
    agent.recorder = recorder
    assert agent.recorder is recorder
    with pytest.raises(TypeError, match=r"recorder must be a pt.Recorder"):
        agent.recorder = object()  # type: ignore[assignment]


def test_a_subclass_may_not_hide_an_option() -> None:
    with pytest.raises(TypeError, match="Sequential defines tool_execution, the name of a"):

        class Sequential(pt.Agent):
            tool_execution = "sequential"

    with pytest.raises(TypeError, match=r"super\(\).__init__\(..., before_tool_call=...\)"):

        class Checking(pt.Agent):
            async def before_tool_call(self, context: Any) -> None:
                return None

    class Fine(pt.Agent):
        def __init__(self) -> None:
            super().__init__(tool_execution="sequential")
            self.max_turns = 3

    assert (Fine().tool_execution, Fine().max_turns) == ("sequential", 3)


def test_an_option_set_before_init_says_so() -> None:
    class Early(pt.Agent):
        def __init__(self) -> None:
            self.max_turns = 3
            super().__init__()

    with pytest.raises(AttributeError, match=r"Agent.__init__ has not run"):
        Early()


def test_a_misspelt_option_is_an_error_not_an_attribute_no_run_reads() -> None:
    agent = make_agent([])
    with pytest.raises(AttributeError, match="no option or attribute 'max_turn': did you mean"):
        agent.max_turn = 1  # type: ignore[attr-defined]
    assert agent.max_turns is None and "max_turn" not in vars(agent)
    with pytest.raises(AttributeError, match="no option or attribute ''"):
        setattr(agent, "", 1)  # (not an IndexError)
    with mock.patch.object(agent, "prompt", new=mock.AsyncMock()):  # what tests of apps do
        assert isinstance(agent.prompt, mock.AsyncMock)

    class Mine(pt.Agent):  # an application's subclass may keep its own attributes
        pass

    mine = Mine()
    mine.ticket = "T-1"  # type: ignore[attr-defined]
    assert mine.ticket == "T-1"  # type: ignore[attr-defined]


def test_an_agent_cannot_be_copied() -> None:
    agent = make_agent([])
    for copier in (copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match=r"a pt.Agent cannot be copied"):
            copier(agent)


def test_the_loop_config_names_what_it_refuses() -> None:
    model = pt.get_model("faux", "faux-1")
    with pytest.raises(TypeError, match=r"^model must be a pt.Model .*got 'faux/faux-1'$"):
        pt.AgentLoopConfig("faux/faux-1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^stream_options must be a pt.StreamOptions or None"):
        pt.AgentLoopConfig(model, stream_options={"temperature": 0})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^finish_turn must be a function .*got 'end'$"):
        pt.AgentLoopConfig(model, finish_turn="end")  # type: ignore[arg-type]
    assert pt.AgentLoopConfig(model, stream_options=None).stream_options == pt.StreamOptions()
    assert pt.Agent(stream_options=None).stream_options == pt.StreamOptions()
