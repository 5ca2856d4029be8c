"""The test-only surface the conformance suite drives: off by default, samples, outside edits,
state and clock, each refusal with a stable cause."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from sqlmodel import func, select
from support import kv_server

from hatp_journal.toolkit import (
    DeclarationError,
    Journal,
    SigningKey,
    ToolFailed,
    Tx,
    irreversible,
    read_only,
)
from hatp_journal.toolkit._testing_surface import (
    TESTING_ENV,
    ConformanceSurface,
    ShiftableClock,
    surface_requested,
)
from hatp_journal.toolkit.testing import FakeClock, Sample, outside_edit_for, sample_for
from hatp_journal.toolkit.wire import BINDING_TOOLS, META_KEY, TESTING_TOOLS


@sample_for(kv_server.put)
def put_a_value(tx: Tx) -> Sample:
    stored = tx.session.exec(select(func.count()).select_from(kv_server.KvItem)).one()
    return Sample(arguments={"key": "colour", "value": f"blue-{stored}"}, resource=kv_server.uri("colour"))


@outside_edit_for(kv_server.put)
def someone_else_puts(resource: str, tx: Tx) -> None:
    kv_server.outside_edit(tx, resource.rsplit("/", 1)[-1], "red", "eve")


@irreversible(reason="delivered to external recipients", remedy="send a correction")
def shout(text: str) -> dict[str, str]:
    """Say something out loud."""
    return {"said": text}


@read_only()
def peek(key: str) -> dict[str, str]:
    """Read nothing in particular."""
    return {"key": key}


@sample_for(shout)
def bad_sample(tx: Tx) -> Sample:
    return Sample(arguments={"txt": "typo in the parameter name"})


TOOLS = (*kv_server.TOOLS, put_a_value, someone_else_puts, shout, peek, bad_sample)


def served(tmp_path: Path, *, testing: bool | None) -> tuple[FastMCP, Journal]:
    mcp = FastMCP("kv")
    journal = Journal(
        "kv://store", key=SigningKey.generate(), store=tmp_path / "kv.db", clock=FakeClock(), testing=testing
    )
    journal.register(mcp, *TOOLS)
    return mcp, journal


@pytest.fixture
async def kv(tmp_path: Path) -> AsyncIterator[Client[Any]]:
    mcp, _ = served(tmp_path, testing=True)
    async with Client(mcp) as client:
        yield client


async def answer(client: Client[Any], name: str, /, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool_mcp(name, arguments)
    return bool(result.is_error), (result.meta or {}).get(META_KEY, {})


@pytest.mark.anyio
async def test_the_testing_tools_are_published_only_in_testing_mode(tmp_path: Path) -> None:
    quiet, _ = served(tmp_path / "a", testing=False)
    loud, _ = served(tmp_path / "b", testing=True)

    async with Client(quiet) as client:
        assert not {tool.name for tool in await client.list_tools()} & set(TESTING_TOOLS)
    async with Client(loud) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
    assert set(TESTING_TOOLS) <= set(tools)
    assert all((tools[name].meta or {})[META_KEY] == {"testing": True} for name in TESTING_TOOLS)


def test_testing_mode_follows_the_environment_variable_only_when_it_is_exactly_one() -> None:
    assert surface_requested({TESTING_ENV: "1"})
    assert not surface_requested({TESTING_ENV: "true"})
    assert not surface_requested({})


def test_the_recorder_hides_the_testing_tools_from_agents_like_the_binding() -> None:
    assert set(TESTING_TOOLS) <= set(BINDING_TOOLS)


@pytest.mark.anyio
async def test_samples_are_made_fresh_for_every_operation_that_changes_something(kv: Client[Any]) -> None:
    await kv.call_tool_mcp("put", {"key": "size", "value": "L"})
    failed, first = await answer(kv, "hatp_testing_samples", tool="put")
    await kv.call_tool_mcp("put", {"key": "weight", "value": "2 kg"})
    _, second = await answer(kv, "hatp_testing_samples", tool="put")

    assert not failed
    [offered] = first["operations"]
    assert offered == {
        "tool": "put",
        "outsideEdit": True,
        "sample": {
            "arguments": {"key": "colour", "value": "blue-1"},
            "resource": "kv://store/colour",
            "shows": [],
            "hides": [],
            "undoMayDiffer": [],
        },
    }
    assert second["operations"][0]["sample"]["arguments"]["value"] == "blue-2"


@pytest.mark.anyio
async def test_read_only_tools_get_no_sample_and_a_sample_with_wrong_arguments_is_refused(
    kv: Client[Any],
) -> None:
    failed, body = await answer(kv, "hatp_testing_samples")

    assert failed
    assert body["error"]["code"] == "TOOL_FAILED"
    assert body["error"]["data"]["cause"] == "BAD_SAMPLE"
    assert "peek" not in body["error"]["message"]


@pytest.mark.anyio
async def test_an_outside_edit_changes_the_resource_and_the_state_reads_it_without_changing_it(
    kv: Client[Any],
) -> None:
    await kv.call_tool_mcp("put", {"key": "colour", "value": "blue"})

    _, before = await answer(kv, "hatp_testing_state", tool="put", resource="kv://store/colour")
    _, touched = await answer(kv, "hatp_testing_touch", tool="put", resource="kv://store/colour")
    _, after = await answer(kv, "hatp_testing_state", tool="put", resource="kv://store/colour")

    assert before["fields"] == {"value": "blue"}
    assert before["changedBy"] == "agent"
    assert touched == after
    assert after["fields"] == {"value": "red"}
    assert after["changedBy"] == "eve"
    assert after["version"] != before["version"]


@pytest.mark.anyio
async def test_the_state_of_a_missing_resource_says_it_does_not_exist(kv: Client[Any]) -> None:
    _, state = await answer(kv, "hatp_testing_state", tool="put", resource="kv://store/nothing")

    assert state == {"resource": "kv://store/nothing", "exists": False, "fields": {}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments", "cause"),
    [
        ("hatp_testing_touch", {"tool": "shout", "resource": "x"}, "NO_OUTSIDE_EDIT"),
        ("hatp_testing_state", {"tool": "shout", "resource": "x"}, "NOT_UNDOABLE"),
        ("hatp_testing_samples", {"tool": "nope"}, "NOT_A_TOOL"),
        ("hatp_testing_clock", {"advanceSeconds": -1}, "CLOCK_BACKWARDS"),
    ],
)
async def test_what_the_surface_cannot_do_is_refused_with_a_stable_cause(
    kv: Client[Any], tool: str, arguments: dict[str, Any], cause: str
) -> None:
    failed, body = await answer(kv, tool, **arguments)

    assert failed
    assert (body["error"]["code"], body["error"]["data"]["cause"]) == ("TOOL_FAILED", cause)


@pytest.mark.anyio
async def test_the_clock_moves_forward_and_the_journal_keeps_its_time(tmp_path: Path) -> None:
    mcp, journal = served(tmp_path, testing=True)
    async with Client(mcp) as client:
        _, start = await answer(client, "hatp_testing_clock")
        _, later = await answer(client, "hatp_testing_clock", advanceSeconds=3600)

    assert (start["now"], later["now"]) == ("2026-11-01T09:00:00Z", "2026-11-01T10:00:00Z")
    assert journal.now().hour == 10


def test_only_a_journal_in_testing_mode_lets_its_clock_be_moved(tmp_path: Path) -> None:
    clock = FakeClock()

    plain = Journal("kv://x", key=SigningKey.generate(), store=tmp_path / "x.db", clock=clock, testing=False)
    testing = Journal("kv://x", key=SigningKey.generate(), store=tmp_path / "x.db", clock=clock, testing=True)

    assert plain.clock is clock
    assert isinstance(testing.clock, ShiftableClock)
    assert testing.clock.base is clock


def sample_maker() -> Callable[[Tx], Sample]:
    def make(tx: Tx) -> Sample:
        return Sample(arguments={})

    return make


def outside_edit() -> Callable[[str, Tx], None]:
    def edit(resource: str, tx: Tx) -> None: ...

    return edit


@pytest.mark.parametrize(
    ("hook", "fix"),
    [
        (lambda: sample_for(peek)(sample_maker()), "read-only tool needs no sample"),
        (lambda: outside_edit_for(shout)(outside_edit()), "only @undoable tools"),
        (lambda: sample_for("not_registered")(sample_maker()), "no tool of that name"),
        (lambda: sample_for(kv_server.put)(sample_maker()), "put already has a @sample_for"),
    ],
)
def test_a_hook_on_the_wrong_kind_of_tool_is_refused_at_registration(
    tmp_path: Path, hook: Callable[[], Callable[..., Any]], fix: str
) -> None:
    journal = Journal("kv://x", key=SigningKey.generate(), store=tmp_path / "x.db", testing=True)

    with pytest.raises(DeclarationError, match=fix):
        journal.add(*kv_server.TOOLS, put_a_value, shout, peek, hook())


def test_a_hook_that_cannot_be_called_as_documented_is_refused_when_decorated() -> None:
    def needs_an_argument(deal_id: str, tx: Tx) -> Sample:
        return Sample(arguments={})

    with pytest.raises(DeclarationError, match=r"def sample\(tx: Tx\) -> Sample"):
        sample_for(kv_server.put)(needs_an_argument)
    with pytest.raises(DeclarationError, match="decorate"):
        sample_for(print)


@pytest.mark.anyio
async def test_a_state_reader_that_returns_the_wrong_type_is_refused_as_bad_state(kv: Client[Any]) -> None:
    await kv.call_tool_mcp("put", {"key": "colour", "value": "blue"})
    kv_server.Knobs.reader_breaks = "wrong type"
    try:
        failed, body = await answer(kv, "hatp_testing_state", tool="put", resource="kv://store/colour")
    finally:
        kv_server.Knobs.reader_breaks = None

    assert failed
    assert (body["error"]["code"], body["error"]["data"]["cause"]) == ("TOOL_FAILED", "BAD_STATE")


def test_the_surface_of_a_journal_not_in_testing_mode_refuses_to_move_its_clock(tmp_path: Path) -> None:
    _, journal = served(tmp_path, testing=False)
    before = journal.now()

    with pytest.raises(ToolFailed) as refused:
        ConformanceSurface(journal).clock(advance_seconds=3600)

    assert refused.value.data["cause"] == "CLOCK_FIXED"
    assert journal.now() == before
