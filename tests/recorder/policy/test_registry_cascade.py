"""A compensation's ``cascade`` (what the server's inverse also removes on its own) is checked when
the registry is loaded: a path the state read has not, a member its elements have not, values named
by a placeholder that names nothing, or a cascade without a snapshot to compare with is refused
with the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.recorder.policy import PolicyFileError, load_policy

EVIDENCE = {"version": "1.0", "source": "graph.js:1"}
ENTITY = {"type": "object", "properties": {"name": {"type": "string"}}}
RELATION = {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}}}
GRAPH = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": ENTITY},
        "relations": {"type": "array", "items": RELATION},
        "title": {"type": "string"},
    },
}
CASCADE = {"path": "/relations", "matchAny": ["from", "to"], "of": "{added.entities[*].name}"}


def registry(cascade: Any = CASCADE, *, snapshot: bool = True) -> dict[str, Any]:
    compensation: dict[str, Any] = {
        "resource": "graph:main",
        "inverse": {"tool": "delete_entities", "arguments": {"entityNames": "{args.names}"}},
        "cascade": [cascade],
    }
    if snapshot:
        compensation["snapshot"] = {"tool": "read_graph", "arguments": {}}
    else:
        compensation |= {"state": {"tool": "read_graph", "arguments": {}}, "restored": {}}
    return {
        "format": "hatp-registry/1",
        "server": {"id": "graph", "package": "internal:graph", "version": "1.0"},
        "status": "draft",
        "tools": {
            "read_graph": {
                "class": "R0", "rationale": "Reads.", "evidence": EVIDENCE, "arguments": [],
                "outputSchema": GRAPH,
            },
            "create_entities": {
                "class": "R1", "rationale": "Creates.", "evidence": EVIDENCE, "arguments": ["names"],
                "compensation": compensation,
            },
            "delete_entities": {
                "class": "R2", "rationale": "Deletes.", "evidence": EVIDENCE, "arguments": ["entityNames"],
            },
        },
    }  # fmt: skip


def load(tmp_path: Path, written: dict[str, Any]) -> Path:
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(written, indent=2))
    policy = {"registry": {"files": ["graph.json"], "servers": {"graph": "graph"}}}
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    load_policy(tmp_path / "policy.json").host_registry()
    return path


def test_a_cascade_onto_relations_naming_the_added_entities_loads(tmp_path: Path) -> None:
    load(tmp_path, registry())


@pytest.mark.parametrize(
    ("cascade", "words", "marker"),
    [
        ({**CASCADE, "path": "/relation"}, "the state read has no field 'relation'", '"/relation"'),
        ({**CASCADE, "path": "/title"}, "/title is a string, not an array", '"/title"'),
        ({**CASCADE, "matchAny": ["from", "form"]}, "have no member 'form'", '"form"'),
        ({**CASCADE, "of": "{added.entities[*].nick}"}, "no field 'nick'", "nick"),
        ({**CASCADE, "of": "{added.entities[0.name}"}, "does not parse", "entities[0.name"),
        ({**CASCADE, "path": "relations"}, "should match pattern", '"relations"'),
        ({**CASCADE, "matchAny": []}, "at least 1 item", '"matchAny"'),
        ({**CASCADE, "also": 1}, "also", '"also"'),
    ],
    ids=[
        "a path the state read has not",
        "a path to a string",
        "a member the elements have not",
        "values naming no field",
        "values that do not parse",
        "a path that is no JSON Pointer",
        "no member to match",
        "a stray key",
    ],
)
def test_a_cascade_naming_what_the_state_read_has_not_is_refused_with_its_line(
    tmp_path: Path, cascade: dict[str, Any], words: str, marker: str
) -> None:
    with pytest.raises(PolicyFileError) as caught:
        load(tmp_path, registry(cascade))

    assert words in str(caught.value)
    lines = (tmp_path / "graph.json").read_text().splitlines()
    assert caught.value.line == max(n for n, line in enumerate(lines, 1) if marker in line)


def test_a_cascade_without_a_snapshot_to_tell_the_calls_own_elements_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as caught:
        load(tmp_path, registry({**CASCADE, "of": "{args.names}"}, snapshot=False))

    assert "a cascade needs a snapshot read" in str(caught.value)
