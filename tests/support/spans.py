"""OpenTelemetry spans as tests read them: the SDK's in-memory exporter for this process, and the
console exporter's JSON as a Recorder process wrote it to its log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hatp_journal.recorder import tracing


@contextmanager
def spans_in_this_process() -> Iterator[InMemorySpanExporter]:
    """Tracing on, its spans kept in memory; the process's SDK provider is set once and reused, as
    OpenTelemetry allows only one."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    tracing.enable()
    try:
        yield exporter
    finally:
        tracing.enable(False)
        exporter.shutdown()  # a shut exporter takes no more spans from this provider


def spans_in_log(path: Path) -> list[dict[str, Any]]:
    """The spans the console exporter wrote (one JSON object each) among a process's other lines."""
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            found.append(value)
        at = text.find("{", end)
    return found
