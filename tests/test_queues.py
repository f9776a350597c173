"""Queues as data (issue 16): queued(), remove_queued(), replace_queued(),
peek_queued_messages(), QueueUpdate on events() channels, abort(clear_queues=True)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import pi_trio as pt
from pi_trio.providers import faux

from .support import make_agent


def _texts(messages: Any) -> list[str]:
    out = []
    for message in messages:
        block = message.content[0]
        out.append(block.text)
    return out


def test_queued_lists_both_queues_with_ids_in_order() -> None:
    agent = make_agent([])
    first = agent.steer("s1")
    agent.follow_up("f1")
    agent.steer("s2")
    items = agent.queued()
    assert [(i.kind, i.message.content[0].text) for i in items] == [  # type: ignore[union-attr]
        ("steer", "s1"),
        ("steer", "s2"),
        ("follow_up", "f1"),
    ]
    assert items[0] == first and len({i.id for i in items}) == 3


def test_remove_and_replace_keep_order_and_ids() -> None:
    agent = make_agent([])
    a, b, c = agent.steer("a"), agent.steer("b"), agent.steer("c")
    agent.replace_queued(b.id, "B")
    agent.remove_queued(a.id)
    items = agent.queued()
    assert [i.id for i in items] == [b.id, c.id]
    assert _texts(i.message for i in items) == ["B", "c"]
    with pytest.raises(KeyError, match="taken it already"):
        agent.remove_queued(a.id)


def test_peek_shows_what_the_next_poll_takes() -> None:
    agent = make_agent([])
    assert agent.peek_queued_messages() == []
    agent.follow_up("f1")
    agent.follow_up("f2")
    assert _texts(agent.peek_queued_messages()) == ["f1"]  # one-at-a-time
    agent.follow_up_mode = "all"
    assert _texts(agent.peek_queued_messages()) == ["f1", "f2"]
    agent.steer("s1")
    assert _texts(agent.peek_queued_messages()) == ["s1"]  # steering first, like pi
    assert len(agent.queued()) == 3  # peeking took nothing


async def test_a_removed_message_is_never_sent_and_a_replaced_one_is_sent_rewritten(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(
        [faux.assistant_message("one two three") for _ in range(4)], (), token_delay=0.1
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.prompt, "go")
        keep = agent.steer("keep")
        drop = agent.steer("drop")
        agent.replace_queued(keep.id, "kept, rewritten")
        agent.remove_queued(drop.id)
    users = [m for m in agent.state.messages if isinstance(m, pt.UserMessage)]
    assert _texts(users) == ["go", "kept, rewritten"]


async def test_queue_updates_reach_events_channels_not_listeners(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = make_agent(
        [faux.assistant_message("one"), faux.assistant_message("two")], (), token_delay=0.1
    )
    heard: list[Any] = []
    agent.subscribe(heard.append)
    async with agent.events() as rx:
        item = agent.follow_up("later")  # while idle
        agent.replace_queued(item.id, "later, rewritten")
        await agent.prompt("go")  # drains the follow-up at the end of the first turn
        received = [rx.receive_nowait() for _ in range(rx.statistics().current_buffer_used)]
    updates = [e for e in received if isinstance(e, pt.QueueUpdate)]
    assert [(u.kind, u.change, len(u.queued)) for u in updates] == [
        ("follow_up", "queued", 1),
        ("follow_up", "replaced", 1),
        ("follow_up", "drained", 0),
    ]
    assert not any(isinstance(e, pt.QueueUpdate) for e in heard)
    # the channel's run events still form a well-formed run, with seq numbers in order
    pt.testing.assert_events_valid([e for e in received if not isinstance(e, pt.QueueUpdate)])
    seqs = [e.seq for e in received]
    assert seqs == sorted(seqs)


async def test_abort_keeps_the_queues_unless_asked_to_clear_them(
    autojump_clock: trio.testing.MockClock,
) -> None:
    for clear in (False, True):
        agent = make_agent(
            [faux.assistant_message("a b c d e f") for _ in range(3)], (), token_delay=0.1
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(agent.prompt, "go")
            agent.follow_up("later")
            await trio.sleep(0.25)
            agent.abort(clear_queues=clear)
        assert agent.has_queued_messages() is (not clear)
    agent = make_agent([])
    agent.steer("x")
    agent.abort(clear_queues=True)  # idle: clears, aborts nothing
    assert agent.queued() == ()


async def test_a_recorder_sees_removal_as_a_clear_and_refill() -> None:
    log: list[Any] = []

    class Log:
        def record(self, event: Any) -> bool:
            return False

        async def flush(self) -> None:
            pass

        def queued(self, kind: str, message: Any) -> None:
            log.append(("queued", kind, message.content[0].text))

        def cleared(self, kind: str) -> None:
            log.append(("cleared", kind))

    agent = make_agent([])
    agent.recorder = Log()
    a = agent.steer("a")
    agent.steer("b")
    agent.remove_queued(a.id)
    assert log == [
        ("queued", "steer", "a"),
        ("queued", "steer", "b"),
        ("cleared", "steer"),
        ("queued", "steer", "b"),
    ]
