"""The Recorder's own tools for the agent: bad undo requests get a stable code and no plan,
``hatp_explain`` answers as ``hatp-recorder explain`` does, and the policy can turn the tools off."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest
from support.undo_org import POLICY, Org

from hatp_journal.recorder.config import ConfigError, load_config
from hatp_journal.recorder.gateway.agent_tools import reserved_clash
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy

PUT = ("chain_put", {"key": "a", "value": "1"})


def told(result: Any) -> dict[str, Any]:
    return dict(result.structured_content or {})


def codes(results: list[Any]) -> list[str | None]:
    return [told(result).get("code") if result.is_error else None for result in results]


def test_undo_requests_outside_the_run_or_twice_for_pending_steps_get_a_code_and_no_second_plan(
    org: Org,
) -> None:
    results: list[Any] = []
    calls = [
        PUT,
        ("hatp_request_undo", {"steps": [2]}),  # the run has one step
        ("hatp_request_undo", {"checkpoint": "never-set"}),
        ("hatp_request_undo", {"from_step": 1, "steps": [1]}),
        ("hatp_request_undo", {"from_step": 1}),
        ("hatp_request_undo", {"steps": [1]}),  # the plan for step 1 still waits
        ("hatp_list_changes", {}),
        ("hatp_list_changes", {"since": 1}),  # nothing changed after step 1
    ]

    run = org.agent(calls, told=results)

    assert codes(results) == [
        None,
        "STEP_OUT_OF_RANGE",
        "UNKNOWN_CHECKPOINT",
        "BAD_UNDO_REQUEST",
        None,
        "UNDO_ALREADY_REQUESTED",
        None,
        None,
    ]
    plans = [e for e in org.entries(run) if e.kind == "plan"]
    assert len(plans) == 1
    assert told(results[-1])["changes"] == []
    [change] = told(results[-2])["changes"]
    assert (change["undo"], change["plan"]) == ("requested", f"{run}/{plans[0].id}")
    notes = [e.body["outcome"] for e in org.entries(run) if e.kind == "note"]
    assert [n.get("code") for n in notes] == [None if c is None else c for c in codes(results)[1:]]


def test_explain_tells_the_agent_what_hatp_recorder_explain_tells_a_person_and_unknown_names_get_a_code(
    org: Org,
) -> None:
    results: list[Any] = []
    calls = [
        ("hatp_explain", {"server": "chain", "tool": "put", "arguments": {"key": "a"}}),
        ("hatp_explain", {"server": "nowhere", "tool": "put"}),
        ("hatp_explain", {"server": "chain", "tool": "hatp_journal_compensate"}),  # binding: not for agents
    ]
    org.agent(calls, told=results)
    code, out, err = org.cli("explain", "chain", "put", "--args", '{"key": "a"}', "--json")

    assert code == 0, err
    assert codes(results) == [None, "UNKNOWN_SERVER", "UNKNOWN_TOOL"]
    agent, expected = told(results[0]), json.loads(out)
    assert agent["action"] == expected["action"] == "allow"
    assert agent["class"] == expected["reversibility"]["class"]


def test_the_policy_can_turn_the_agent_tools_off_and_a_call_of_one_is_then_journaled_as_refused(
    org: Org,
) -> None:
    (org.root / "policy.json").write_text(json.dumps({**POLICY, "agentTools": False}))
    results: list[Any] = []

    run = org.agent([("hatp_checkpoint", {"label": "x"})], told=results)

    assert codes(results) == ["UNKNOWN_TOOL"]
    [refused] = org.entries(run)
    assert (refused.kind, refused.body["tool"], refused.body["code"]) == (
        "refused",
        "hatp_checkpoint",
        "UNKNOWN_TOOL",
    )


@pytest.mark.parametrize("name", ["hatp", "hatp_tools"])
def test_a_server_named_with_the_reserved_prefix_is_refused_before_anything_starts(
    org: Org, name: str
) -> None:
    config = load_config(org.config)
    config.servers = {name: config.servers["chain"].model_copy(update={"command": "/nonexistent"})}
    store = org.store()
    recorder = Recorder(config, store=store, policy=load_policy(org.root / "policy.json"))

    async def start() -> None:
        async with AsyncExitStack() as stack:
            await recorder.start(stack)

    try:
        with pytest.raises(ConfigError, match="reserved"):
            anyio.run(start)
    finally:
        store.dispose()
    assert reserved_clash(["chain", "hat"]) is None


def test_arguments_an_agent_tool_refuses_are_journaled_as_a_refused_note_and_answered_with_a_code(
    org: Org,
) -> None:
    results: list[Any] = []
    bad = [
        ("hatp_checkpoint", {"label": ""}),
        ("hatp_checkpoint", {}),
        ("hatp_request_undo", {"steps": "all of them"}),
        ("hatp_list_changes", {"since": [1]}),
        ("hatp_explain", {"server": "chain"}),
    ]

    run = org.agent([PUT, *bad], told=results)

    assert codes(results) == [None, *["BAD_ARGUMENTS"] * len(bad)]
    assert all(
        told(result)["message"].startswith("the arguments do not fit the tool: ") for result in results[1:]
    )
    notes = [e for e in org.entries(run) if e.kind == "note"]
    assert [(n.body["tool"], n.body["arguments"]) for n in notes] == [
        (tool.removeprefix("hatp_"), arguments) for tool, arguments in bad
    ]
    assert [n.body["outcome"] for n in notes] == [{"status": "refused", "code": "BAD_ARGUMENTS"}] * len(bad)
    assert [told(result)["entry"] for result in results[1:]] == [n.id for n in notes]
