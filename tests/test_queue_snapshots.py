"""What ``queued()`` and each ``QueueUpdate`` say is queued stays what the queues hold,
through any mix of steer, follow_up, remove, replace, clear and runs draining them one at a
time or all at once, with an ``events()`` reader (whose notices need a snapshot per change)."""

from __future__ import annotations

import math
import random

import pytest

import pi_trio as pt

from .support import faux, make_agent


def _text(item: pt.agent.QueuedMessage) -> str:
    return item.message.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(6))
async def test_snapshots_follow_every_change(seed: int) -> None:
    rng = random.Random(seed)
    mode = rng.choice(["one-at-a-time", "all"])
    agent = make_agent(
        [faux.assistant_message(f"answer {n}") for n in range(200)],
        (),
        steering_mode=mode,
        follow_up_mode=mode,
    )
    model: dict[str, list[tuple[str, str]]] = {"steer": [], "follow_up": []}
    updates = 0
    async with agent.events(max_buffer_size=math.inf, max_backlog=math.inf) as rx:
        for step in range(150):
            kind = rng.choice(["steer", "follow_up"])
            queue = model[kind]
            action = rng.random()
            if action < 0.45:
                text = f"{kind} {step}"
                item = agent.steer(text) if kind == "steer" else agent.follow_up(text)
                queue.append((item.id, text))
            elif action < 0.6 and queue:
                index = rng.randrange(len(queue))
                agent.remove_queued(queue.pop(index)[0])
            elif action < 0.75 and queue:
                index = rng.randrange(len(queue))
                text = f"rewritten {step}"
                agent.replace_queued(queue[index][0], text)
                queue[index] = (queue[index][0], text)
            elif action < 0.8:
                (agent.clear_steering_queue if kind == "steer" else agent.clear_follow_up_queue)()
                queue.clear()
            elif action < 0.9:
                await agent.prompt(f"prompt {step}")  # drains both queues, as the mode says
                model["steer"].clear()
                model["follow_up"].clear()
            expected = model["steer"] + model["follow_up"]
            assert [(item.id, _text(item)) for item in agent.queued()] == expected
            last: dict[str, pt.QueueUpdate] = {}  # the latest notice of each queue
            while rx.statistics().current_buffer_used:
                event = rx.receive_nowait()
                if isinstance(event, pt.QueueUpdate):
                    updates += 1
                    last[event.kind] = event
            for queue_kind, update in last.items():
                said = [(item.id, _text(item)) for item in update.queued]
                assert said == model[queue_kind]
    assert updates > 20
