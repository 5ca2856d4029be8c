"""An agent uses the Recorder's own tools: a checkpoint, three writes, its list of changes, and a
request to undo everything after the checkpoint. The request is a Reversal Plan that waits for a
person, in ``hatp-recorder asks`` and on the approver's page (over plain HTTP); once approved there,
the writes are undone. The agent never sees a compensation token.
"""

from __future__ import annotations

import json
from typing import Any

from http_browser import signed_in
from support.chain_server import values
from support.undo_org import LEAD
from test_undo_in_background import approve, outcome_once
from web_org import Approver

WRITES = [
    ("chain_put", {"key": "a", "value": "1"}),
    ("chain_put", {"key": "b", "value": "1"}),
    ("chain_put", {"key": "a", "value": "2"}),
]


def told(result: Any) -> dict[str, Any]:
    """What the Recorder answered, as the agent reads it."""
    return dict(result.structured_content or {})


def test_an_agent_requests_the_undo_of_its_writes_after_a_checkpoint_and_a_person_approves_it_on_the_page(
    approver: Approver,
) -> None:
    org = approver.org
    results: list[Any] = []
    calls = [
        ("chain_put", {"key": "before", "value": "kept"}),
        ("hatp_checkpoint", {"label": "start"}),
        *WRITES,
        ("hatp_list_changes", {"since": "start"}),
        ("hatp_request_undo", {"checkpoint": "start"}),
    ]

    run = org.agent(calls, told=results)

    assert not any(result.is_error for result in results), [r.content for r in results]
    checkpoint, changes, requested = told(results[1]), told(results[5]), told(results[6])
    assert checkpoint["afterStep"] == 1
    assert [(c["step"], c["undo"]) for c in changes["changes"]] == [
        (2, "reversible"),
        (3, "reversible"),
        (4, "reversible"),
    ]
    assert all(c["undoBy"] for c in changes["changes"])
    assert requested["status"] == "pending_approval"
    assert requested["approver"] == LEAD
    assert [s["step"] for s in requested["steps"]] == [4, 3, 2]
    ref = requested["plan"]
    assert "ctk_" not in json.dumps([r.model_dump(mode="json", by_alias=True) for r in results])

    code, listed, err = org.cli("asks")
    assert code == 0, err
    assert ref in listed
    browser = signed_in(approver)
    assert f'data-ref="{ref}"' in browser.get("/asks")[1]
    assert values(org.db()) == {"before": "kept", "a": "2", "b": "1"}  # nothing undone before approval

    approve(browser, ref)
    outcome = outcome_once(browser, ref, 'id="reversal"')

    assert 'id="reversal"' in outcome, outcome
    assert values(org.db()) == {"before": "kept"}
    notes = [e.body for e in org.entries(run) if e.kind == "note"]
    assert [(n["tool"], n["outcome"]["status"]) for n in notes] == [
        ("checkpoint", "ok"),
        ("list_changes", "ok"),
        ("request_undo", "ok"),
    ]
    assert notes[-1]["outcome"]["plan"] == ref
    assert org.verify(run).ok
