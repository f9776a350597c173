"""The scripted model behind ``--model faux``: canned answers that exercise the example tools.

It never runs out (each request gets a fresh answer decided from the transcript), so ``chat``,
``rpc`` and ``serve`` can be tried without a key: ask for the time, a sum, ``read <path>``,
``wait <seconds>`` (a slow tool), or a long story (long enough to abort mid-stream).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager

from ..events import StreamEvent
from ..messages import AssistantMessage, Context, TextContent, ToolResultMessage, UserMessage
from ..models import Model
from ..providers import StreamOptions, faux

__all__ = ["LONG_STORY", "CannedModel"]

LONG_STORY = " ".join(
    f"Sentence {i} of a long story, streamed one word at a time so you can abort it."
    for i in range(1, 41)
)

_ARITHMETIC = re.compile(r"[-+(]*\d[\d\s.+\-*/%()]*[+\-*/%][\d\s.+\-*/%()]*\d\)*")
_READ = re.compile(r"\bread\s+(\S+)", re.IGNORECASE)
_WAIT = re.compile(r"\bwait\s+(\d+(?:\.\d+)?)", re.IGNORECASE)


def _text_of(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(block.text for block in message.content if isinstance(block, TextContent))


def answer(context: Context, options: StreamOptions, index: int) -> AssistantMessage:
    """The canned answer to the transcript so far."""
    last = context.messages[-1] if context.messages else None
    if isinstance(last, ToolResultMessage):
        result = " ".join(b.text for b in last.content if isinstance(b, TextContent))
        if len(result) > 400:
            result = result[:400] + " ..."
        verdict = "failed" if last.is_error else "says"
        return faux.assistant_message(f"The {last.tool_name} tool {verdict}: {result}")
    said = _text_of(last) if isinstance(last, UserMessage) else ""
    if not context.tools:  # nothing it could call: a compaction's summary request, say
        words = len(said.split())
        return faux.assistant_message(f"A scripted summary of a {words}-word request.")
    lowered = said.lower()
    if "time" in lowered or "clock" in lowered:
        return faux.assistant_message(
            [faux.text("Let me look at the clock."), faux.tool_call("clock", {})]
        )
    sum_match = _ARITHMETIC.search(said)
    if sum_match:
        expression = sum_match.group(0).strip()
        return faux.assistant_message(
            [
                faux.text("Let me work that out."),
                faux.tool_call("calculate", {"expression": expression}),
            ]
        )
    read_match = _READ.search(said)
    if read_match:
        return faux.assistant_message(
            [faux.text("Reading it."), faux.tool_call("read_file", {"path": read_match.group(1)})]
        )
    wait_match = _WAIT.search(said)
    if wait_match:
        seconds = float(wait_match.group(1))
        return faux.assistant_message(
            [faux.text("Waiting."), faux.tool_call("wait", {"seconds": seconds})]
        )
    if "story" in lowered or "long" in lowered or "slow" in lowered:
        return faux.assistant_message(LONG_STORY)
    return faux.assistant_message(
        f"You said: {said!r}. I am the scripted model: ask me for the time, a sum such as "
        "2 + 3 * 4, 'read README.md', 'wait 5' (a slow tool), or a long story; pass --model "
        "provider/id for a real one."
    )


class CannedModel:
    """A stream function answering every request with :func:`answer`, streamed word by word."""

    def __init__(self, *, token_delay: float = 0.0) -> None:
        # a long-lived server must not keep every request
        self._faux = faux.FauxModel(token_delay=token_delay, record_calls=False)
        self.model: Model = self._faux.model

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        self._faux.append_responses([answer])
        return self._faux(model, context, options)
