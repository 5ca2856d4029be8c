"""An agent whose host hands the model only a result's ``content`` text still reads the step numbers
and what to do next, from every agent tool and from a held call; the tools declare the shape of their
structured answers and their hints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from support.undo_org import POLICY, Org, make_org

from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.gateway.agent_answers import OUTPUT_SCHEMAS
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy


def put(key: str, value: str) -> tuple[str, dict[str, Any]]:
    return ("chain_put", {"key": key, "value": value})


def content(result: Any) -> str:
    """What a content-only host shows the model: the text parts, nothing else."""
    return "\n".join(part.text for part in result.content if part.type == "text")


def sentence(result: Any) -> str:
    """The first line of the text: the words, before the JSON."""
    return content(result).split("\n", 1)[0]


def test_every_agent_tool_and_a_held_call_say_the_step_numbers_and_the_next_action_in_content(
    org: Org,
) -> None:
    (org.root / "policy.json").write_text(
        json.dumps({**POLICY, "autonomy": {**POLICY["autonomy"], "read": "ask"}})
    )
    results: list[Any] = []
    calls = [
        put("a", "1"),
        ("hatp_checkpoint", {"label": "before-b"}),
        put("b", "2"),
        ("chain_get", {"key": "a"}),  # a read: held for a person by this policy
        ("hatp_list_changes", {}),
        ("hatp_explain", {"server": "chain", "tool": "get", "arguments": {"key": "a"}}),
        ("hatp_request_undo", {"checkpoint": "before-b"}),
        ("hatp_request_undo", {"steps": [2]}),
    ]

    run = org.agent(calls, told=results)
    checkpoint, held, changes, explained, requested, _ = (content(r) for r in results[1:2] + results[3:])

    assert sentence(results[1]).startswith("Checkpoint 'before-b' set after step 1.")
    assert "call hatp_request_undo with checkpoint 'before-b'" in checkpoint
    ask = json.loads(held.rsplit("\n", 1)[1])["ask"]
    assert sentence(results[3]).startswith(f"Waiting for approval ({ask}):")
    assert "Call again with the same arguments once approved" in held
    assert re.search(r"2 changes: step 1 chain\.put \(reversible until [^)]+\); step 2 chain\.put", changes)
    assert "call hatp_request_undo with from_step or steps" in changes
    assert "chain/get would wait for a person's approval" in explained
    assert "call it, then call again with the same arguments once a person approved it" in explained
    plan = json.loads(requested.rsplit("\n", 1)[1])["plan"]
    assert sentence(results[6]).startswith(f"Undo plan {plan} (from 2) waits for ")
    assert "nothing is undone until then. Steps it undoes: 2." in requested
    assert sentence(results[7]).startswith(f"UNDO_ALREADY_REQUESTED: plan {plan} for some of these steps")
    for result in [results[1], *results[3:]]:  # the structured result follows the sentence, whole
        assert json.loads(content(result).rsplit("\n", 1)[1]) == result.structured_content
    assert run


def test_a_request_with_nothing_to_undo_files_no_plan_and_says_why_for_each_step(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    org = make_org(tmp_path, capfd, plain=True)  # a call to an unaware server relies on all before it
    results: list[Any] = []
    calls = [put("a", "1"), ("plain_shout", {"text": "hi"}), ("hatp_request_undo", {"from_step": 1})]

    run = org.agent(calls, told=results)

    refused = content(results[2])
    assert results[2].is_error
    assert sentence(results[2]).startswith(
        "NOTHING_TO_UNDO: nothing of from 1 can be undone, so no plan was filed:"
    )
    assert "step 2 (cannot be undone: the server does not say how to undo it)" in refused
    assert "step 1 (kept: relied on by e2)" in refused
    told = results[2].structured_content
    assert told["notReversible"] == [
        {"step": 2, "reason": "the server does not say how to undo it", "remedy": None}
    ]
    assert told["blocked"] == [{"step": 1, "reason": "relied on by e2"}]
    assert not [e for e in org.entries(run) if e.kind == "plan"]  # nothing was put before a person
    code, _, err = org.cli("plan", run, "--from", "1", "--by", "human://acme.com/dana")
    assert code == 2
    assert err.startswith("hatp-recorder: NOTHING_TO_UNDO: nothing of from 1 can be undone")


def test_plan_refuses_a_second_plan_for_steps_whose_plan_still_waits(org: Org) -> None:
    run = org.agent([put("a", "1"), put("b", "2")])
    ref, _ = org.plan(run, "--from", "1")

    code, _, err = org.cli("plan", run, "--step", "2", "--by", "human://acme.com/dana")

    assert code == 2
    assert err.startswith(f"hatp-recorder: UNDO_ALREADY_REQUESTED: plan {ref} for some of these steps waits")
    assert len([e for e in org.entries(run) if e.kind == "plan"]) == 1


def test_the_agent_tools_declare_their_output_schema_and_hints(org: Org) -> None:
    async def listed() -> dict[str, Any]:
        config = load_config(org.config)
        store = org.store()
        recorder = Recorder(config, store=store, policy=load_policy(org.root / "policy.json"))
        try:
            from contextlib import AsyncExitStack

            async with AsyncExitStack() as stack:
                mcp = await recorder.start(stack)
                async with Client(mcp) as client:
                    return {t.name: t for t in await client.list_tools() if t.name.startswith("hatp_")}
        finally:
            recorder.close()
            store.dispose()

    tools = anyio.run(listed)

    assert {name: tool.output_schema for name, tool in tools.items()} == {
        f"hatp_{name}": schema for name, schema in OUTPUT_SCHEMAS.items()
    }
    hints = {
        name: (t.annotations.read_only_hint, t.annotations.destructive_hint)
        for name, t in tools.items()
        if t.annotations
    }
    assert hints == {
        "hatp_checkpoint": (False, False),
        "hatp_list_changes": (True, None),
        "hatp_explain": (True, None),
        "hatp_request_undo": (False, False),
    }
