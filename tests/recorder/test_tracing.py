"""The Recorder's OpenTelemetry spans, read with the SDK's own in-memory exporter: a call is a span
with its decision, downstream call and append beneath it, in the agent's trace; an ask, a person's
approval, a plan with its checks and an undo with its compensation are spans too, each naming the
run and the entry. Off, nothing is recorded."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.chain_server import build
from support.undo_org import DANA, LEAD, LEE

from hatp_journal.recorder import tracing
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.testing import RecorderWorld
from hatp_journal.recorder.undo import UndoRequest
from hatp_journal.recorder.undo.actions import ask_for_plan, decide_on_plan, run_plan
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.testing import FakeClock

POLICY = {
    "autonomy": {"compensate": "allow", "read": "allow", "none": "ask", "unknown": "ask", "approver": LEAD},
    "undoAuthority": LEAD,
}
EXPORTER = InMemorySpanExporter()
pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def provider() -> None:
    """The SDK's provider for this process (set once per process, as OpenTelemetry allows)."""
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        current = TracerProvider()
        trace.set_tracer_provider(current)
    current.add_span_processor(SimpleSpanProcessor(EXPORTER))


@pytest.fixture
def traced() -> Iterator[None]:
    EXPORTER.clear()
    tracing.enable()
    try:
        yield
    finally:
        tracing.enable(False)


def ours() -> list[ReadableSpan]:
    return [s for s in EXPORTER.get_finished_spans() if s.name.startswith("hatp.")]


def named(name: str) -> list[ReadableSpan]:
    return [s for s in ours() if s.name == name]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def children(span: ReadableSpan) -> list[str]:
    assert span.context is not None
    return [s.name for s in ours() if s.parent is not None and s.parent.span_id == span.context.span_id]


async def open_world(root: Path) -> tuple[RecorderWorld, Directory, Policy, SigningKey, FastMCP]:
    clock = FakeClock()
    lee = SigningKey.generate()
    directory = Directory.model_validate(
        {"people": [{"id": LEE, "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]}
    )
    policy = Policy.model_validate(POLICY)
    server, _ = build(root / "chain.db", SigningKey.generate(), clock=clock)
    world = await RecorderWorld.open(root, {"chain": server}, policy, principal=DANA, clock=clock)
    return world, directory, policy, lee, server


async def test_a_call_is_a_span_in_the_agents_trace_with_its_decision_downstream_call_and_append(
    tmp_path: Path, traced: None
) -> None:
    world, *_ = await open_world(tmp_path)
    try:
        with trace.get_tracer("the agent").start_as_current_span("the agent's turn") as turn:
            result = await world.agent.call_tool_mcp("chain_put", {"key": "a", "value": "1"})
        entry = result.meta["hatp/recorder"]["entry"] if result.meta else None
    finally:
        await world.close()

    [call] = named("hatp.call")
    assert attributes(call) == {
        "hatp.server": "chain",
        "hatp.tool": "put",
        "hatp.run": world.run,
        "hatp.entry": entry,
    }
    # The agent's client sent its trace in the call's _meta (traceparent): the Recorder continued it.
    assert call.context is not None
    assert call.context.trace_id == turn.get_span_context().trace_id
    assert children(call) == ["hatp.decide", "hatp.downstream", "hatp.append"]
    [decide] = named("hatp.decide")
    assert attributes(decide)["hatp.action"] == "allow"
    [append] = named("hatp.append")
    assert attributes(append) == {"hatp.run": world.run, "hatp.kind": "call", "hatp.entry": entry}


async def test_a_call_on_the_data_plane_continues_the_traceparent_its_meta_carries(
    tmp_path: Path, traced: None
) -> None:
    world, *_ = await open_world(tmp_path)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    try:
        # The stdio and HTTP fronts hand a call to answer() with its _meta as sent: no library span.
        await world.recorder.answer("chain", "put", {"key": "a", "value": "1"}, {"traceparent": parent})
    finally:
        await world.close()

    [call] = named("hatp.call")
    assert call.context is not None
    assert call.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert call.parent is not None
    assert call.parent.span_id == 0xB7AD6B7169203331


async def test_an_ask_its_approval_a_plan_its_checks_and_an_undo_are_spans(
    tmp_path: Path, traced: None
) -> None:
    world, directory, policy, lee, server = await open_world(tmp_path)
    try:
        await world.agent.call_tool_mcp("chain_put", {"key": "a", "value": "1"})
        held = await world.agent.call_tool_mcp("chain_publish", {"key": "a"})
        ask = (held.structured_content or {})["ask"]
        world.recorder.asks.decide(
            f"{world.run}/{ask}",
            "approve",
            person=LEE,
            key=lee,
            directory=directory,
            now=world.recorder.clock(),
        )
        await world.agent.call_tool_mcp("chain_publish", {"key": "a"})
        servers = UndoServers(world.config, world.store, world.stack, {"chain": server})
        now = world.recorder.clock()
        planned = await ask_for_plan(
            world.store, policy, directory, servers, world.run, UndoRequest(steps=(1,)), by=DANA, now=now
        )
        decided = await decide_on_plan(
            world.store,
            policy,
            directory,
            servers,
            planned.ref,
            "approve",
            person=LEE,
            key=lee,
            overrides=(),
            now=now,
        )
        assert decided.counted, decided.message
        reversal = await run_plan(world.store, planned.ref, servers, now, lambda: (directory, policy))
    finally:
        await world.close()

    assert [attributes(s)["hatp.ask"] for s in named("hatp.ask")] == [ask]
    assert [attributes(s)["hatp.ask"] for s in named("hatp.held")] == [ask]
    call_approval, plan_approval = named("hatp.approval")
    assert attributes(call_approval) | {"hatp.entry": None} == {
        "hatp.ask": f"{world.run}/{ask}",
        "hatp.decision": "approve",
        "hatp.by": LEE,
        "hatp.counted": True,
        "hatp.entry": None,
    }
    assert attributes(plan_approval)["hatp.plan"] == planned.ref
    [plan] = named("hatp.plan")
    assert attributes(plan) == {"hatp.run": world.run, "hatp.by": DANA, "hatp.plan": planned.ref}
    assert "hatp.check" in children(plan)
    [undo] = named("hatp.undo")
    assert attributes(undo) == {"hatp.plan": planned.ref, "hatp.entry": reversal.id}
    [compensate] = named("hatp.compensate")
    assert attributes(compensate)["hatp.step"] == 1
    assert attributes(compensate)["hatp.server"] == "chain"


async def test_with_tracing_off_nothing_is_recorded(tmp_path: Path) -> None:
    EXPORTER.clear()
    world, *_ = await open_world(tmp_path)
    try:
        await world.agent.call_tool_mcp("chain_put", {"key": "a", "value": "1"})
    finally:
        await world.close()

    assert ours() == []


def test_an_exporter_nobody_knows_is_refused_with_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin-of-my-own")
    with pytest.raises(tracing.TracingError) as refused:
        tracing._exporters()

    assert refused.value.code == tracing.EXPORTER_UNKNOWN


def test_otlp_without_its_exporter_package_is_refused_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(tracing.TracingError) as refused:
        tracing._exporters()

    assert refused.value.code == tracing.EXPORTER_MISSING
    assert "opentelemetry-exporter-otlp-proto-http" in str(refused.value)


def test_a_traceparent_in_meta_is_the_parent_and_anything_else_is_ignored() -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    context = tracing.continued({"traceparent": parent, "hatp/runKey": "k"})

    assert context is not None
    assert trace.get_current_span(context).get_span_context().trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert tracing.continued({"traceparent": 7}) is None
    assert tracing.continued("not a mapping") is None
