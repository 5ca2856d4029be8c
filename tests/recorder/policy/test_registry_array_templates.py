"""Templates over arrays: ``[N]``, ``[*]`` and ``forEach`` render what real array-shaped servers need,
and a placeholder that does not parse, names no field of the tool's JSON Schema, or gives a value of
the wrong type for the argument it fills is refused when the registry is loaded, with the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.recorder.policy import PolicyFileError, load_policy
from hatp_journal.recorder.policy.registry_compensation import TemplateError, render

EVIDENCE = {"version": "1.0", "source": "graph.js:1"}
ENTITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "observations": {"type": "array", "items": {"type": "string"}},
    },
}
GRAPH = {"type": "object", "properties": {"entities": {"type": "array", "items": ENTITY}}}
REGISTRY = {
    "format": "hatp-registry/1",
    "server": {"id": "graph", "package": "internal:graph", "version": "1.0"},
    "status": "draft",
    "tools": {
        "read_graph": {
            "class": "R0",
            "rationale": "Reads.",
            "evidence": EVIDENCE,
            "arguments": [],
            "outputSchema": GRAPH,
        },
        "create_entities": {
            "class": "R1",
            "rationale": "Creates.",
            "evidence": EVIDENCE,
            "arguments": ["entities"],
            "inputSchema": {"type": "object", "properties": {"entities": {"type": "array", "items": ENTITY}}},
            "compensation": {
                "resource": "graph:{args.entities[0].name}",
                "snapshot": {"tool": "read_graph", "arguments": {}},
                "inverse": {
                    "tool": "delete_entities",
                    "arguments": {"entityNames": "{added.entities[*].name}"},
                },
            },
        },
        "delete_entities": {
            "class": "R2",
            "rationale": "Deletes.",
            "evidence": EVIDENCE,
            "arguments": ["entityNames"],
            "inputSchema": {
                "type": "object",
                "properties": {"entityNames": {"type": "array", "items": {"type": "string"}}},
            },
        },
    },
}


def load(tmp_path: Path, registry: dict[str, Any]) -> Path:
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(registry, indent=2))
    policy = {"registry": {"files": ["graph.json"], "servers": {"graph": "graph"}}}
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    load_policy(tmp_path / "policy.json").host_registry()
    return path


def with_template(where: str, template: Any) -> dict[str, Any]:
    """REGISTRY with one template of create_entities' compensation replaced."""
    registry = json.loads(json.dumps(REGISTRY))
    compensation = registry["tools"]["create_entities"]["compensation"]
    if where == "resource":
        compensation["resource"] = template
    else:
        compensation["inverse"]["arguments"]["entityNames"] = template
    return registry


def test_the_array_registry_loads(tmp_path: Path) -> None:
    load(tmp_path, REGISTRY)


@pytest.mark.parametrize(
    ("where", "template", "words"),
    [
        ("resource", "graph:{args.entities.0.name}", "does not parse"),
        ("resource", "graph:{args.entities[-1].name}", "does not parse"),
        ("resource", "graph:{args.entities[0]name}", "does not parse"),
        ("resource", "graph:{}", "does not parse"),
        ("resource", "graph:{args.nosuch.0}", "does not parse"),
        ("resource", "graph:{args.nosuch[0]}", "no field 'nosuch'"),
        ("resource", "graph:{args.entities[0].title}", "no field 'title'"),
        ("entityNames", "{added.entities[*].nick}", "no field 'nick'"),
        ("resource", "graph:{args.entities.name}", "reads a member of a array"),
        ("resource", "graph:{args.entities[0].name[0]}", "needs an array, the schema says string"),
        ("entityNames", "{args.entities[0].name}", "gives string, where the argument takes array"),
        ("entityNames", "{added.entities}", "no field"),
    ],
    ids=[
        "a dotted index",
        "a negative index",
        "a step without a dot",
        "empty braces",
        "an unknown field with a dotted index",
        "an unknown field",
        "an unknown member of an element",
        "an unknown member of the diff's elements",
        "a member of an array",
        "an index into a string",
        "a string where the argument takes an array",
        "not at hand",
    ],
)
def test_a_template_that_does_not_parse_names_no_field_or_has_the_wrong_type_is_refused_with_its_line(
    tmp_path: Path, where: str, template: str, words: str
) -> None:
    registry = with_template(where, template)
    if words == "no field":  # {added} needs a snapshot: without one it is not at hand
        compensation = registry["tools"]["create_entities"]["compensation"]
        del compensation["snapshot"]
        compensation["state"] = {"tool": "read_graph", "arguments": {}}
        compensation["restored"] = {"entities": []}
        words = "not at hand"
    path = tmp_path / "graph.json"

    with pytest.raises(PolicyFileError) as caught:
        load(tmp_path, registry)

    assert words in caught.value.message
    marker = '"entityNames": "{' if where == "entityNames" else '"resource": '
    lines = path.read_text().splitlines()
    assert caught.value.line == max(n for n, line in enumerate(lines, 1) if marker in line)
    assert caught.value.path == str(path)


def test_paths_render_elements_every_element_and_flat_arrays() -> None:
    ada, bo = {"name": "Ada", "observations": ["a", "b"]}, {"name": "Bo", "observations": []}
    data = {"args": {"entities": [ada, bo]}}

    assert render("{args.entities[1].name}", data) == "Bo"
    assert render("{args.entities[*].name}", data) == ["Ada", "Bo"]
    assert render("{args.entities[*].observations[*]}", data) == ["a", "b"]
    assert render("made {args.entities[*].name}", data) == "made Ada, Bo"
    mapped = {"forEach": "{args.entities}", "each": {"entityName": "{item.name}", "n": "{item.observations}"}}
    assert render(mapped, data) == [{"entityName": "Ada", "n": ["a", "b"]}, {"entityName": "Bo", "n": []}]


@pytest.mark.parametrize(
    "template", ["{args.entities[2].name}", "{args.entities.name}", "{args.entities[0][0]}", "{args.nosuch}"]
)
def test_a_path_the_data_does_not_have_is_a_template_error_at_render(template: str) -> None:
    with pytest.raises(TemplateError):
        render(template, {"args": {"entities": [{"name": "Ada"}]}})


def test_a_mapping_with_a_stray_key_or_over_no_array_is_refused(tmp_path: Path) -> None:
    stray = {"forEach": "{added.entities}", "each": "{item.name}", "extra": 1}
    over_a_string = {"forEach": "{args.entities[0].name}", "each": "{item}"}

    for template, words in ((stray, "a mapping is"), (over_a_string, "gives string")):
        with pytest.raises(PolicyFileError) as caught:
            load(tmp_path, with_template("entityNames", template))
        assert words in caught.value.message
