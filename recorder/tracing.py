"""OpenTelemetry spans for what the Recorder does: each call (its decision, the downstream call, the
append), each ask, approval, plan, check and compensation, with the run and entry ids as attributes.

Off unless ``[recorder] tracing = true``: then :func:`configure` installs the SDK's tracer provider
with the exporters the standard ``OTEL_*`` environment names (``OTEL_TRACES_EXPORTER``: ``otlp``,
``console`` or ``none``; ``OTEL_SERVICE_NAME``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` …), unless the
process has a provider already (an application embedding the Recorder, a test's in-memory exporter).
A call whose ``_meta`` carries a W3C ``traceparent`` continues the agent's trace.

Spans are attached with the :func:`traced` decorator, so the code they measure reads as before; off,
a traced function costs one flag test.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:  # OpenTelemetry's API comes with the serve extra: imported where it is used
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

TRACER_NAME = "hatp_journal.recorder"
EXPORTER_UNKNOWN = "TRACING_EXPORTER_UNKNOWN"
EXPORTER_MISSING = "TRACING_EXPORTER_MISSING"
SDK_MISSING = "TRACING_UNAVAILABLE"

Attributes = dict[str, str | int | float | bool]
F = TypeVar("F", bound=Callable[..., Any])

_on = False


class TracingError(Exception):
    """Tracing was asked for but can't be set up (``code`` says why); the Recorder doesn't start."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def enabled() -> bool:
    return _on


def enable(on: bool = True) -> None:
    """Send spans to whatever tracer provider the process has (``configure`` sets one up)."""
    global _on
    _on = on


def configure(on: bool) -> None:
    """Turn tracing on with the SDK and the ``OTEL_*`` environment's exporters (``on`` is the config's
    ``tracing``); a provider the process set up already is kept."""
    if not on:
        return
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise TracingError(SDK_MISSING, "install hatp-journal[tracing] (OpenTelemetry's SDK)") from None
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES itself.
        provider = TracerProvider(resource=Resource.create({"service.name": "hatp-recorder"}))
        for exporter in _exporters():
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    enable()


def _exporters() -> list[Any]:
    names = [n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    exporters: list[Any] = []
    for name in names:
        if name == "none":
            continue
        if name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter(out=sys.stderr))  # stdout may be the MCP channel
        elif name == "otlp":
            exporters.append(_otlp())
        else:
            said = f"OTEL_TRACES_EXPORTER names {name!r}: otlp, console or none"
            raise TracingError(EXPORTER_UNKNOWN, said)
    return exporters


def _otlp() -> Any:
    grpc = os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf") == "grpc"
    package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if grpc else "http")
    try:
        if grpc:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
    except ImportError:
        raise TracingError(
            EXPORTER_MISSING, f"OTEL_TRACES_EXPORTER=otlp needs {package} installed (or set it to console)"
        ) from None
    return OTLPSpanExporter()  # endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*


def continued(meta: Any) -> Context | None:
    """The agent's trace context from a request's ``_meta`` (W3C ``traceparent``), if it sent one."""
    if isinstance(meta, Mapping) and isinstance(meta.get("traceparent"), str):
        from opentelemetry import propagate

        return propagate.extract({k: v for k, v in meta.items() if isinstance(v, str)})
    return None


@contextmanager
def span(name: str, attributes: Attributes, parent: Context | None = None) -> Iterator[Span]:
    from opentelemetry import trace

    with trace.get_tracer(TRACER_NAME).start_as_current_span(
        name, context=parent, attributes={f"hatp.{k}": v for k, v in attributes.items()}
    ) as current:
        yield current


def traced(
    name: str,
    attributes: Callable[[Mapping[str, Any]], Attributes] | None = None,
    *,
    result: Callable[[Any], Attributes] | None = None,
    parent: str | None = None,
) -> Callable[[F], F]:
    """Run the function (sync or async) in a span ``name`` when tracing is on. ``attributes`` gets
    the function's arguments by name, ``result`` its return value (each ``k`` becomes ``hatp.k``);
    ``parent`` names the argument holding the ``_meta`` whose ``traceparent`` the span continues."""

    def wrap(function: F) -> F:
        signature = inspect.signature(function)

        def opened(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            named = signature.bind(*args, **kwargs).arguments
            given = attributes(named) if attributes else {}
            return span(name, given, continued(named.get(parent)) if parent else None)

        def noted(current: Span, value: Any) -> None:
            if result is not None:
                current.set_attributes({f"hatp.{k}": v for k, v in result(value).items()})

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def traced_async(*args: Any, **kwargs: Any) -> Any:
                if not _on:
                    return await function(*args, **kwargs)
                with opened(args, kwargs) as current:
                    value = await function(*args, **kwargs)
                    noted(current, value)
                    return value

            return cast(F, traced_async)

        @functools.wraps(function)
        def traced_sync(*args: Any, **kwargs: Any) -> Any:
            if not _on:
                return function(*args, **kwargs)
            with opened(args, kwargs) as current:
                value = function(*args, **kwargs)
                noted(current, value)
                return value

        return cast(F, traced_sync)

    return wrap


def answered(answer: Any) -> Attributes:
    """The run, entry and outcome of a call's answer as the agent gets it."""
    ours = answer.get("_meta", {}).get("hatp/recorder", {}) if isinstance(answer, dict) else {}
    found: Attributes = {}
    for member in ("run", "entry", "status", "code", "ask"):
        value = ours.get(member) if isinstance(ours, dict) else None
        if isinstance(value, str):
            found[member] = value
    if isinstance(ours, dict) and ours.get("replayed") is True:
        found["replayed"] = True
    return found
