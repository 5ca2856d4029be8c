"""A cascade is read from the stored call entry as it is: one no Recorder could have written is
skipped, never a crash; a well-formed one still names what the call did not make."""

from __future__ import annotations

from typing import Any

import pytest

from hatp_journal.recorder.changes.host_cascade import would_remove

GRAPH = {"entities": [{"name": "Cy"}], "relations": [{"from": "Cy", "to": "Ada", "relationType": "knew"}]}
WELL_FORMED = {"path": "/relations", "matchAny": ["from", "to"], "values": ["Cy"]}


def _member(cascade: Any) -> dict[str, Any]:
    before = {"entities": [], "relations": GRAPH["relations"]}
    return {"snapshot": before, "afterState": GRAPH, "cascade": cascade}


@pytest.mark.parametrize(
    "cascade",
    [
        ["not an object"],
        [{"matchAny": ["from"], "values": ["Cy"]}],
        [{"path": 7, "matchAny": ["from"], "values": ["Cy"]}],
        [{"path": "/relations", "matchAny": "from", "values": ["Cy"]}],
        [{"path": "/relations", "matchAny": [1], "values": ["Cy"]}],
        [{"path": "/relations", "matchAny": ["from"], "values": "Cy"}],
        "not a list",
    ],
)
def test_a_cascade_no_recorder_wrote_is_skipped_without_a_crash(cascade: Any) -> None:
    assert would_remove(_member(cascade), GRAPH) == []


def test_a_well_formed_cascade_names_the_relation_the_call_did_not_make() -> None:
    [taken] = would_remove(_member([WELL_FORMED]), GRAPH)

    assert taken["field"] == "/relations/0"
