"""pi_trio's side of the benchmarks: :func:`run_scenario` hands each scenario to the module
that runs it (S1-S7 :mod:`.impl_memory`, S7h :mod:`._s7_http`, S7s :mod:`.impl_subagents`,
S1d/S5d/S8 :mod:`.impl_sessions`, S9 :mod:`.impl_serve`, S10 :mod:`.impl_compaction`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import trio

from ._common import peak_rss_mib
from .impl_memory import (
    s1_turns,
    s2_fanout,
    s5_many_agents,
    s6_stream,
    s7_cancel_stress,
    s34_abort,
)


def run_scenario(params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    scenario = params.pop("scenario")
    if scenario == "S7h":
        from ._s7_http import s7_http

        result = trio.run(lambda: s7_http(**params))
    elif scenario == "S7s":
        from .impl_subagents import s7s_subagents

        result = trio.run(lambda: s7s_subagents(**params))
    elif scenario == "S10":
        from .impl_compaction import s10_compaction

        result = trio.run(lambda: s10_compaction(**params))
    elif scenario == "S9":
        from .impl_serve import s9_serve

        result = trio.run(lambda: s9_serve(**params))
    elif scenario in ("S1d", "S5d", "S8"):
        from . import impl_sessions

        durable = {"S1d": impl_sessions.s1d_turns, "S5d": impl_sessions.s5d_many_agents,
                   "S8": impl_sessions.s8_resume}[scenario]  # fmt: skip
        result = trio.run(lambda: durable(**params))
    else:
        functions: dict[str, Callable[..., Coroutine[Any, Any, dict[str, Any]]]] = {
            "S1": s1_turns,
            "S2": s2_fanout,
            "S2b": s2_fanout,
            "S3": s34_abort,
            "S4": s34_abort,
            "S5": s5_many_agents,
            "S6": s6_stream,
            "S7": s7_cancel_stress,
        }
        function = functions[scenario]
        result = trio.run(lambda: function(**params))
    result.setdefault("checks", {})
    result["figures"]["peak_rss_mib"] = peak_rss_mib()
    return result
