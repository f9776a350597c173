"""``AgentOptions``: an agent's options as attributes over one :class:`AgentSettings` record.

``pt.Agent`` derives from it: ``agent.settings`` is the record, and each of its fields is also
an attribute of the agent (:class:`SettingField`) that reads the record and, when assigned,
replaces it with that field changed, so a bad value raises where it is set.
"""

from __future__ import annotations

import difflib
import operator
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

from .._errors import AgentBusyError
from ..compaction import Compaction
from ..loop import (
    ConvertToLlm,
    FinishTurn,
    GetApiKey,
    PrepareNextTurn,
    PrepareRequest,
    ShouldStopAfterTurn,
    SteeringPolicy,
    ToolExecution,
    TransformContext,
)
from ..providers import StreamFn, StreamOptions
from ..tools import AfterToolCall, BeforeToolCall, OutputType
from ._inbox import QueueMode
from ._recorder import Recorder
from ._settings import SETTING_NAMES, AgentSettings, recorder_change_problem

__all__ = ["AgentOptions", "HasSettings", "SettingField"]


class HasSettings(Protocol):
    """What a :class:`SettingField` is an attribute of (``pt.Agent``)."""

    @property
    def settings(self) -> AgentSettings: ...

    @settings.setter
    def settings(self, settings: AgentSettings) -> None: ...


T = TypeVar("T")


class SettingField(Generic[T]):
    """An attribute that is one field of its owner's ``settings``: reading it reads the
    record, assigning it replaces the record with that field changed (checked at once)."""

    __slots__ = ("_name", "_read")

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name
        self._read = operator.attrgetter(name)

    @overload
    def __get__(self, owner: None, owner_type: type[Any]) -> SettingField[T]: ...
    @overload
    def __get__(self, owner: HasSettings, owner_type: type[Any]) -> T: ...
    def __get__(self, owner: HasSettings | None, owner_type: type[Any]) -> T | SettingField[T]:
        if owner is None:
            return self
        value: T = self._read(owner.settings)
        return value

    def __set__(self, owner: HasSettings, value: T) -> None:
        owner.settings = owner.settings.evolve(**{self._name: value})


class AgentOptions:
    """The options of an agent (``pt.Agent`` is one): the :attr:`settings` record, each of its
    fields an attribute, and the recorder, changed on its own, between runs."""

    _settings: AgentSettings
    _closed: ClassVar[bool] = False
    """pi_trio's own classes take no attribute they do not define (an application's subclass
    may keep its own): a misspelt option would be an attribute no run reads."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass may not hide an option under a class attribute or method of its name:
        runs read ``settings``, so it would be ignored (and assignments with it)."""
        super().__init_subclass__(**kwargs)
        cls._closed = cls.__module__.startswith("pi_trio.")
        hidden = sorted(name for name in SETTING_NAMES if name in cls.__dict__)
        if hidden:
            raise TypeError(
                f"{cls.__qualname__} defines {', '.join(hidden)}, the name of a pt.Agent option: "
                f"runs would not see it. Pass it to Agent.__init__ (super().__init__(..., "
                f"{hidden[0]}=...)) or assign it after that"
            )

    def __setattr__(self, name: str, value: Any) -> None:
        """Refuse a name ``pt.Agent`` does not define (``agent.max_turn = 1``), saying which
        one was meant; methods and options may still be replaced (``mock.patch.object``)."""
        if name.startswith("_") or not self._closed or hasattr(type(self), name):
            object.__setattr__(self, name, value)
            return
        public = [key for key in dir(type(self)) if not key.startswith("_")]
        close = difflib.get_close_matches(name, public, n=1)
        hint = f": did you mean {close[0]!r}?" if close else " (its options: pt.AgentSettings)"
        raise AttributeError(f"pt.Agent has no option or attribute {name!r}{hint}")

    @property
    def settings(self) -> AgentSettings:
        """Every option of this agent, as one record; assign a new one to change them (the
        next run takes it; the queue modes apply at once). A new record keeps the recorder:
        :attr:`recorder` is changed on its own, between runs."""
        try:
            return self._settings
        except AttributeError:
            raise AttributeError(
                "this agent's options are not set yet: Agent.__init__ has not run (pass options "
                "to it, or assign them after it)"
            ) from None

    @settings.setter
    def settings(self, settings: AgentSettings) -> None:
        if not isinstance(settings, AgentSettings):
            raise TypeError(
                f"settings must be a pt.AgentSettings, got a {type(settings).__name__} "
                "(agent.settings.evolve(option=value) makes one)"
            )
        problem = recorder_change_problem(self.settings.recorder, settings.recorder)
        if problem is not None:
            raise ValueError(problem)
        self._use(settings)

    @property
    def recorder(self) -> Recorder | None:
        """What this agent reports its runs and queue changes to (a durable store's
        :class:`pt.Recorder`), or None. Changed between runs only.

        Raises:
            AgentBusyError: set during a run (the run records to the recorder it began with).
            TypeError: not a ``pt.Recorder`` or None.
        """
        return self.settings.recorder

    @recorder.setter
    def recorder(self, recorder: Recorder | None) -> None:
        if self.is_running and recorder is not self._settings.recorder:
            raise AgentBusyError("the recorder cannot change during a run: wait_for_idle() first")
        self._use(self._settings.evolve(recorder=recorder))

    @property
    def is_running(self) -> bool:
        raise NotImplementedError

    def _use(self, settings: AgentSettings) -> None:
        """Take ``settings`` (a subclass applies what it must at once, then calls this)."""
        self._settings = settings

    convert_to_llm = SettingField[ConvertToLlm | None]()
    transform_context = SettingField[TransformContext | None]()
    stream_fn = SettingField[StreamFn | None]()
    get_api_key = SettingField[GetApiKey | None]()
    before_tool_call = SettingField[BeforeToolCall | None]()
    after_tool_call = SettingField[AfterToolCall | None]()
    should_stop_after_turn = SettingField[ShouldStopAfterTurn | None]()
    steering_mode = SettingField[QueueMode]()
    follow_up_mode = SettingField[QueueMode]()
    tool_execution = SettingField[ToolExecution]()
    session_id = SettingField[str | None]()
    stream_options = SettingField[StreamOptions]()
    close_timeout = SettingField[float]()
    max_parallel_tools = SettingField[int | None]()
    tool_timeout = SettingField[float | None]()
    steering_policy = SettingField[SteeringPolicy]()
    max_turns = SettingField[int | None]()
    max_tool_calls = SettingField[int | None]()
    max_total_tokens = SettingField[int | None]()
    max_cost = SettingField[float | None]()
    finish_turn = SettingField[FinishTurn | None]()
    prepare_request = SettingField[PrepareRequest | None]()
    prepare_next_turn = SettingField[PrepareNextTurn | None]()
    compaction = SettingField[Compaction | None]()
    output_type = SettingField[OutputType | None]()
    output_retries = SettingField[int]()
