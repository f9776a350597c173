"""Building the agents the commands run: the scripted model or a real one, with tools."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..agent import Agent, AgentState
from ..models import Model
from ..tools import AgentTool
from ._canned import CannedModel
from ._models import SCRIPTED, CliError, resolve_model
from ._tools import example_tools

__all__ = ["SYSTEM_PROMPT", "agent_factory", "new_state"]

SYSTEM_PROMPT = (
    "You are a helpful assistant in a terminal. You can tell the time, do arithmetic and read "
    "text files under the current directory with your tools. Be brief."
)


def new_state(system_prompt: str, model: Model, tools: Iterable[AgentTool]) -> AgentState:
    """An agent state with these settings and an empty transcript."""
    return AgentState(system_prompt=system_prompt, model=model, tools=tools)


def agent_factory(
    spec: str,
    *,
    token_delay: float,
    system_prompt: str = SYSTEM_PROMPT,
    base_url: str | None = None,
) -> Callable[[], Agent]:
    """A function making a fresh agent per call, for ``--model spec``.

    ``spec`` is ``faux`` (the canned scripted model, streaming a word every ``token_delay``
    seconds) or ``provider/id``; the model and its key are checked here, once, so a bad
    ``--model`` fails before anything runs (:class:`CliError`).
    """
    if spec == SCRIPTED:
        if base_url is not None:
            raise CliError("--base-url is for a real model (--model provider/id)")

        def scripted() -> Agent:
            canned = CannedModel(token_delay=token_delay)
            state = new_state(system_prompt, canned.model, example_tools())
            return Agent(state, stream_fn=canned)

        return scripted
    model = resolve_model(spec, base_url)

    def real() -> Agent:
        return Agent(new_state(system_prompt, model, example_tools()))

    return real


def resume_with_model(agent: Agent, template: Agent, model_given: bool) -> None:
    """Give a resumed durable session (``agent``, with its logged model) the model the command
    runs: ``--model`` given, that one (``template``'s) replaces the logged one; not given, the
    session keeps its logged model, and a real one is then run by its own provider (its API
    key from the environment), never by the scripted stream of the command's default."""
    logged, wanted = agent.state.model, template.state.model
    if (logged.provider, logged.id) == (wanted.provider, wanted.id):
        return
    if model_given:
        agent.state.model = wanted
        agent.stream_fn = template.stream_fn
    else:
        agent.stream_fn = None
