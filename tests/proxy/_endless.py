"""An upstream stream function that streams one delta and then waits forever.

It records how it was closed, so a test can see that a client's cancellation or hang-up
reached the upstream request (``closed_by`` holds ``trio.Cancelled`` then).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, aclosing

import trio

import pi_trio as pt
from pi_trio.providers import MessageBuilder


class Endless:
    def __init__(self) -> None:
        self.reached = trio.Event()  # the delta has been handed out
        self.closed = trio.Event()
        self.closed_by: BaseException | None = None
        self.calls = 0

    def __call__(
        self, model: pt.Model, context: pt.Context, options: pt.StreamOptions
    ) -> AbstractAsyncContextManager[AsyncIterator[pt.StreamEvent]]:
        self.calls += 1
        return aclosing(self._stream(model))

    async def _stream(self, model: pt.Model) -> AsyncGenerator[pt.StreamEvent, None]:
        builder = MessageBuilder(model)
        yield builder.start()
        yield builder.text_start()
        yield builder.text_delta(0, "tick")
        self.reached.set()
        try:
            await trio.sleep_forever()
        except BaseException as exc:
            self.closed_by = exc
            raise
        finally:
            self.closed.set()
        yield builder.done()  # never reached
