"""``--approve TOOL``: the commands' tools of those names wait for a person's decision."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection

import attrs

from ..agent import Agent

__all__ = ["add_approve_option", "mark_tools", "with_approvals"]


def add_approve_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--approve", action="append", default=[], metavar="TOOL",
        help="the tool TOOL waits for your decision before each call (repeatable)",
    )  # fmt: skip


def mark_tools(agent: Agent, names: Collection[str]) -> None:
    """Make the agent's tools of these names require approval (tools added later, MCP's, are
    marked at the next call)."""
    if not names:
        return
    tools = agent.state.tools
    if any(tool.name in names and tool.requires_approval is not True for tool in tools):
        agent.state.tools = [
            attrs.evolve(tool, requires_approval=True) if tool.name in names else tool
            for tool in tools
        ]


def with_approvals(make_agent: Callable[[], Agent], names: Collection[str]) -> Callable[[], Agent]:
    """``make_agent`` whose agents' tools of these names require approval."""
    if not names:
        return make_agent

    def made() -> Agent:
        agent = make_agent()
        mark_tools(agent, names)
        return agent

    return made
