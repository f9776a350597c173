"""OpenTelemetry spans for pi_trio runs (install the ``otel`` extra: ``pi-trio[otel]``).

With ``opentelemetry-api`` installed, every run makes spans following the GenAI semantic
conventions: ``invoke_agent`` per run, ``chat {model}`` per model request (model, token usage,
finish reason, ``error.type``), ``execute_tool {name}`` per tool call (call id, outcome). They
go to the global tracer provider (no-ops until an SDK is configured) unless :func:`configure`
names another. Without the extra nothing is imported and nothing is recorded. See
``docs/debugging.md`` for the span tree and what each attribute holds.
"""

from __future__ import annotations

from ._telemetry import configure

__all__ = ["configure"]
