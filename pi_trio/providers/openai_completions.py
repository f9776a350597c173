"""The "openai-completions" wire API: OpenAI Chat Completions and the servers that copy it.

One request is ``POST {base_url}/chat/completions`` with ``stream: true``; the
answer is a stream of ``chat.completion.chunk`` objects ended by ``[DONE]``.
Besides OpenAI this is how Ollama, llama.cpp's server, vLLM, LM Studio,
OpenRouter, Groq, DeepSeek, xAI and many more are spoken to, and they differ
in small ways. :func:`compat_for` settles those differences from the model's
provider and base URL (as pi-ai does), and any key in ``model.compat`` wins:

``max_tokens_field``            "max_completion_tokens" (OpenAI) or "max_tokens"
``supports_developer_role``     system prompt as "developer" for reasoning models
``supports_usage_in_streaming`` send ``stream_options.include_usage``
``supports_store``              send ``store: false``
``supports_reasoning_effort``   send ``reasoning_effort``
``supports_strict_mode``        send ``strict: false`` in tool definitions
``thinking_format``             "openai", "openrouter", "deepseek", "zai", "qwen",
                                "qwen-chat-template": how a reasoning level is asked for
``requires_tool_result_name``   tool results carry ``name``
``requires_assistant_after_tool_result``  bridge tool result -> user with an assistant turn
``requires_thinking_as_text``   replay thinking as a text part

Local servers (a loopback base URL) get the conservative choices: "system"
role, ``max_tokens``, no ``store``.

The module is a little over 500 lines on purpose: the compat switches, the request built
from them and the decoder of the answer are one wire API's translation, read together.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

import attrs

from ..events import StreamEvent
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..models import Model
from ._builder import MessageBuilder
from ._failure import ProviderFailure, kind_of_code
from ._options import StreamOptions, forced_tool
from ._sse import SSEEvent
from ._stream import WireApi, WireRequest, is_loopback, parse_event_json
from ._transform import transform_messages
from ._usage import compute_cost, token_count

__all__ = [
    "CompletionsCompat",
    "build_request",
    "compat_for",
    "stream_openai_completions",
]

_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_STOP_REASONS: dict[str, Literal["stop", "length", "toolUse"]] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


ThinkingFormat: TypeAlias = Literal[
    "openai", "openrouter", "deepseek", "zai", "qwen", "qwen-chat-template"
]


@attrs.frozen(kw_only=True)
class CompletionsCompat:
    """The switches of one OpenAI-compatible server (see the module docstring)."""

    supports_store: bool = True
    supports_developer_role: bool = True
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    max_tokens_field: str = "max_completion_tokens"
    supports_strict_mode: bool = True
    thinking_format: ThinkingFormat | str = "openai"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    requires_reasoning_content_on_assistant_messages: bool = False


_COMPAT_FIELDS = frozenset(attrs.fields_dict(CompletionsCompat))


def compat_for(model: Model) -> CompletionsCompat:
    """The compat switches for ``model``: detected defaults, overridden by the keys of
    ``model.compat`` that name a switch (other keys belong to other wire APIs)."""
    provider, url = model.provider, model.base_url
    is_zai = provider == "zai" or "api.z.ai" in url
    is_moonshot = provider.startswith("moonshotai") or "api.moonshot." in url
    is_grok = provider == "xai" or "api.x.ai" in url
    is_deepseek = provider == "deepseek" or "deepseek.com" in url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in url
    is_local = is_loopback(url) or provider in ("ollama", "llama.cpp", "llamacpp", "vllm")
    non_standard = (
        is_zai
        or is_moonshot
        or is_grok
        or is_deepseek
        or is_local
        or provider in ("cerebras", "opencode")
        or any(host in url for host in ("cerebras.ai", "chutes.ai", "opencode.ai"))
    )
    thinking_format: ThinkingFormat
    if is_deepseek:
        thinking_format = "deepseek"
    elif is_zai:
        thinking_format = "zai"
    elif is_openrouter:
        thinking_format = "openrouter"
    else:
        thinking_format = "openai"
    detected = CompletionsCompat(
        supports_store=not non_standard,
        supports_developer_role=not non_standard,
        supports_reasoning_effort=not (is_grok or is_zai or is_moonshot),
        max_tokens_field=(
            "max_tokens"
            if (is_moonshot or is_local or "chutes.ai" in url)
            else "max_completion_tokens"
        ),
        supports_strict_mode=not is_moonshot,
        thinking_format=thinking_format,
        requires_reasoning_content_on_assistant_messages=is_deepseek,
    )
    overrides = {
        k: v for k, v in (model.compat or {}).items() if v is not None and k in _COMPAT_FIELDS
    }
    return attrs.evolve(detected, **overrides) if overrides else detected


def _normalize_id(model: Model) -> Any:
    def normalize(tool_call_id: str, source: AssistantMessage) -> str:
        if "|" in tool_call_id:  # an OpenAI Responses id: "call_id|item_id"
            call_id = tool_call_id.split("|", 1)[0]
            return "".join(c if c.isalnum() or c in "_-" else "_" for c in call_id)[:40]
        if model.provider == "openai":
            return tool_call_id[:40]
        return tool_call_id

    return normalize


def _image_url(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def convert_messages(
    model: Model, context: Context, compat: CompletionsCompat
) -> list[dict[str, Any]]:
    """Chat Completions ``messages`` for ``context``."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        out.append({"role": role, "content": context.system_prompt})
    messages = transform_messages(context.messages, model, _normalize_id(model))
    last_role: str | None = None
    i = 0
    while i < len(messages):
        message = messages[i]
        if (
            compat.requires_assistant_after_tool_result
            and last_role == "toolResult"
            and isinstance(message, UserMessage)
        ):
            out.append({"role": "assistant", "content": "I have processed the tool results."})
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                out.append({"role": "user", "content": message.content})
            else:
                parts = [
                    {"type": "text", "text": b.text}
                    if isinstance(b, TextContent)
                    else _image_url(b)
                    for b in message.content
                ]
                if parts:
                    out.append({"role": "user", "content": parts})
            last_role = "user"
        elif isinstance(message, AssistantMessage):
            entry = _assistant_entry(model, message, compat)
            if entry is not None:
                out.append(entry)
            last_role = "assistant"
        else:
            images: list[dict[str, Any]] = []
            while i < len(messages) and isinstance(messages[i], ToolResultMessage):
                result = messages[i]
                assert isinstance(result, ToolResultMessage)
                text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
                has_images = any(isinstance(b, ImageContent) for b in result.content)
                tool_entry: dict[str, Any] = {
                    "role": "tool",
                    "content": text if text else "(see attached image)",
                    "tool_call_id": result.tool_call_id,
                }
                if compat.requires_tool_result_name and result.tool_name:
                    tool_entry["name"] = result.tool_name
                out.append(tool_entry)
                if has_images and "image" in model.input:
                    images += [_image_url(b) for b in result.content if isinstance(b, ImageContent)]
                i += 1
            i -= 1
            if images:
                if compat.requires_assistant_after_tool_result:
                    out.append(
                        {"role": "assistant", "content": "I have processed the tool results."}
                    )
                intro = {"type": "text", "text": "Attached image(s) from tool result:"}
                out.append({"role": "user", "content": [intro, *images]})
                last_role = "user"
            else:
                last_role = "toolResult"
        i += 1
    return out


def _assistant_entry(
    model: Model, message: AssistantMessage, compat: CompletionsCompat
) -> dict[str, Any] | None:
    entry: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat.requires_assistant_after_tool_result else None,
    }
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text.strip())
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    if thinking and compat.requires_thinking_as_text:
        joined = "\n\n".join(b.thinking for b in thinking)
        parts = [{"type": "text", "text": joined}]
        if text:
            parts.append({"type": "text", "text": text})
        entry["content"] = parts
    else:
        if text:
            entry["content"] = text
        # llama.cpp / gpt-oss style: replay reasoning in the field it came in
        field = thinking[0].thinking_signature if thinking else None
        if field in _REASONING_FIELDS:
            entry[field] = "\n".join(b.thinking for b in thinking)
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    if calls:
        entry["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
        # OpenRouter's encrypted reasoning (Gemini 3 and others need it back on the
        # tool-call turn), kept per call as pi-ai does: thought_signature holds the JSON
        details = []
        for c in calls:
            if c.thought_signature:
                with contextlib.suppress(ValueError):  # not one of ours: nothing to send back
                    details.append(json.loads(c.thought_signature))
        if details:
            entry["reasoning_details"] = details
    if (
        compat.requires_reasoning_content_on_assistant_messages
        and model.reasoning
        and "reasoning_content" not in entry
    ):
        entry["reasoning_content"] = ""
    if not entry["content"] and not calls:
        return None
    return entry


def build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> WireRequest:
    """The HTTP request for one streamed completion."""
    compat = compat_for(model)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, compat),
        "stream": True,
    }
    if compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        body["store"] = False
    max_tokens = options.max_tokens or (min(model.max_tokens, 32_000) if model.max_tokens else None)
    if max_tokens:
        body[compat.max_tokens_field] = max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        strict = {"strict": False} if compat.supports_strict_mode else {}
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    **strict,
                },
            }
            for t in context.tools
        ]
        choice = options.tool_choice
        if choice is not None:
            word, name = forced_tool(choice)
            named = {"type": "function", "function": {"name": name}}
            body["tool_choice"] = word if name is None else named
    elif any(
        isinstance(m, ToolResultMessage) or (isinstance(m, AssistantMessage) and m.tool_calls)
        for m in context.messages
    ):
        body["tools"] = []  # proxies in front of Anthropic want tools when history has calls
    _add_reasoning(model, options, compat, body)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    return WireRequest(f"{model.base_url.rstrip('/')}/chat/completions", headers, body)


def _add_reasoning(
    model: Model, options: StreamOptions, compat: CompletionsCompat, body: dict[str, Any]
) -> None:
    if not model.reasoning:
        return
    effort = "high" if options.reasoning == "xhigh" else options.reasoning
    fmt = compat.thinking_format
    if fmt in ("zai", "qwen"):
        body["enable_thinking"] = effort is not None
    elif fmt == "qwen-chat-template":
        body["chat_template_kwargs"] = {
            "enable_thinking": effort is not None,
            "preserve_thinking": True,
        }
    elif fmt == "deepseek":
        body["thinking"] = {"type": "enabled" if effort else "disabled"}
        if effort:
            body["reasoning_effort"] = effort
    elif fmt == "openrouter":
        body["reasoning"] = {"effort": effort or "none"}
    elif effort and compat.supports_reasoning_effort:
        body["reasoning_effort"] = effort


class CompletionsDecoder:
    """Chat Completions chunks -> stream events (see :class:`pi_trio.providers._stream.Decoder`)."""

    def __init__(self, model: Model, builder: MessageBuilder) -> None:
        self.model = model
        self.builder = builder
        self.text_index: int | None = None
        self.thinking_index: int | None = None
        self.tools_by_stream_index: dict[int, int] = {}
        self.tools_by_id: dict[str, int] = {}
        self.finish_reason: str | None = None
        self.done = False

    @property
    def ended(self) -> bool:
        """``[DONE]`` came: nothing after it is read."""
        return self.done

    def feed(self, event: SSEEvent) -> Iterable[StreamEvent]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return []
        chunk = parse_event_json(event)
        if not isinstance(chunk, dict):
            return []
        if "error" in chunk and not chunk.get("choices"):
            error = chunk["error"]
            text = error.get("message", json.dumps(error)) if isinstance(error, dict) else error
            code = (error.get("code") or error.get("type")) if isinstance(error, dict) else None
            code = None if code is None else str(code)
            raise ProviderFailure(
                f"provider error in stream: {text}", kind=kind_of_code(code), code=code
            )
        message = self.builder.message
        if chunk.get("id") and not message.response_id:
            message.response_id = chunk["id"]
        if chunk.get("model") and chunk["model"] != self.model.id and not message.response_model:
            message.response_model = chunk["model"]
        choices = chunk.get("choices") or []
        choice = choices[0] if choices else None
        usage = chunk.get("usage") or (choice or {}).get("usage")
        if usage:
            message.usage = self._usage(usage)
        if not choice:
            return []
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}
        out: list[StreamEvent] = []
        # a refusal is what the model said instead of answering: kept as text, as the
        # Responses decoder does
        content = delta.get("content") or delta.get("refusal")
        if isinstance(content, str) and content:
            if self.text_index is None:
                out.append(self.builder.text_start())
                self.text_index = len(message.content) - 1
            out.append(self.builder.text_delta(self.text_index, content))
        for field in _REASONING_FIELDS:
            value = delta.get(field)
            if isinstance(value, str) and value:
                if self.thinking_index is None:
                    out.append(self.builder.thinking_start())
                    self.thinking_index = len(message.content) - 1
                    block = message.content[self.thinking_index]
                    assert isinstance(block, ThinkingContent)
                    block.thinking_signature = field  # where to put it when replaying
                out.append(self.builder.thinking_delta(self.thinking_index, value))
                break
        for call in delta.get("tool_calls") or []:
            out += self._tool_call(call)
        for detail in delta.get("reasoning_details") or []:
            if (
                isinstance(detail, dict)
                and detail.get("type") == "reasoning.encrypted"
                and detail.get("id")
                and detail.get("data")
            ):
                for block in message.content:
                    if isinstance(block, ToolCall) and block.id == detail["id"]:
                        block.thought_signature = json.dumps(detail)
                        break
        return out

    def _tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        stream_index = call.get("index")
        call_id = call.get("id") or ""
        function = call.get("function") or {}
        index = None
        if isinstance(stream_index, int):
            index = self.tools_by_stream_index.get(stream_index)
        if index is None and call_id:
            index = self.tools_by_id.get(call_id)
        if index is None:
            out.append(self.builder.tool_call_start(call_id, function.get("name") or ""))
            index = len(self.builder.message.content) - 1
            if isinstance(stream_index, int):
                self.tools_by_stream_index[stream_index] = index
        block = self.builder.message.content[index]
        assert isinstance(block, ToolCall)
        if call_id:
            self.tools_by_id[call_id] = index
            if not block.id:
                block.id = call_id
        if not block.name and function.get("name"):
            block.name = function["name"]
        arguments = function.get("arguments") or ""
        out.append(self.builder.tool_call_delta(index, arguments, parse_partial=bool(arguments)))
        return out

    def _usage(self, raw: dict[str, Any]) -> Usage:
        prompt = token_count(raw, "prompt_tokens")
        details = raw.get("prompt_tokens_details")
        reported_cached = token_count(details, "cached_tokens") or token_count(
            raw, "prompt_cache_hit_tokens"
        )
        cache_write = token_count(details, "cache_write_tokens")
        cache_read = max(0, reported_cached - cache_write) if cache_write else reported_cached
        input_tokens = max(0, prompt - cache_read - cache_write)
        output = token_count(raw, "completion_tokens")
        usage = Usage(
            input=input_tokens,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            total_tokens=input_tokens + output + cache_read + cache_write,
        )
        return compute_cost(self.model, usage)

    def finish(self) -> Iterable[StreamEvent]:
        if self.finish_reason is None:
            # [DONE] with no finish_reason is a stream cut short too (llama.cpp's server sends
            # it when a second request ends the first), not an answer (pi#8996)
            raise ProviderFailure(
                "the stream ended ([DONE]) before the response was complete (no finish_reason)"
                if self.done
                else "connection closed before the response was complete (no finish_reason or "
                "[DONE])",
                kind="connection",
            )
        out: list[StreamEvent] = []
        content = self.builder.message.content
        for index, block in enumerate(content):
            if isinstance(block, TextContent):
                out.append(self.builder.text_end(index))
            elif isinstance(block, ThinkingContent):
                out.append(self.builder.thinking_end(index))
            else:
                out.append(self.builder.tool_call_end(index))
        reason = self.finish_reason
        if reason in _STOP_REASONS:
            mapped = _STOP_REASONS[reason]
            if mapped == "stop" and self.builder.message.tool_calls:
                mapped = "toolUse"  # some local servers say "stop" after tool calls
            out.append(self.builder.done(mapped))
            return out
        raise ProviderFailure(f"Provider finish_reason: {reason}")


stream_openai_completions = WireApi(build_request, CompletionsDecoder, "openai-completions")
"""Stream one openai-completions response as pi_trio stream events; never raises for
a provider failure (see :func:`pi_trio.providers.stream_wire`)."""
