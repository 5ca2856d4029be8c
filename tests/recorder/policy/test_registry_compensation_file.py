"""A host-declared compensation whose templates name what does not exist is refused when the registry
is loaded, with the file and the line of the template, not on the day of an undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.recorder.policy import PolicyFileError, load_policy
from hatp_journal.recorder.policy.registry_compensation import TemplateError, render

EVIDENCE = {"version": "1.0", "source": "notes.py:1"}
NOTES = {
    "format": "hatp-registry/1",
    "server": {"id": "notes", "package": "internal:notes", "version": "1.0"},
    "status": "draft",
    "tools": {
        "get_note": {"class": "R0", "rationale": "Reads.", "evidence": EVIDENCE, "arguments": ["id"]},
        "put_note": {"class": "R1", "rationale": "Puts.", "evidence": EVIDENCE, "arguments": ["id", "text"]},
        "set_note": {
            "class": "R4",
            "rationale": "Overwrites a note.",
            "evidence": EVIDENCE,
            "arguments": ["id", "text"],
            "compensation": {
                "resource": "note:{args.id}",
                "snapshot": {"tool": "get_note", "arguments": {"id": "{args.id}"}},
                "snapshotFields": ["text"],
                "inverse": {"tool": "put_note", "arguments": {"id": "{args.id}", "text": "{snapshot.text}"}},
            },
        },
    },
}


def written(tmp_path: Path, registry: dict[str, Any]) -> Path:
    (tmp_path / "notes.json").write_text(json.dumps(registry, indent=2))
    policy = {"registry": {"files": ["notes.json"], "servers": {"notes": "notes"}}}
    (tmp_path / "policy.json").write_text(json.dumps(policy, indent=2))
    return tmp_path / "notes.json"


def line_of(path: Path, text: str) -> int:
    return max(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def compensation(registry: dict[str, Any]) -> dict[str, Any]:
    return dict(registry["tools"]["set_note"]["compensation"])


def test_a_good_compensation_loads_and_is_found_for_its_server_and_tool(tmp_path: Path) -> None:
    written(tmp_path, NOTES)

    registry = load_policy(tmp_path / "policy.json").host_registry()
    found = registry.compensation("notes", "set_note")

    assert found is not None
    assert found.state_read().tool == "get_note"  # the snapshot read, when no state read is given
    assert registry.compensation("notes", "get_note") is None


@pytest.mark.parametrize(
    ("change", "marker"),
    [
        (lambda c: c["inverse"]["arguments"].update(text="{snapshot.body}"), '"{snapshot.body}"'),
        (lambda c: c["inverse"]["arguments"].update(id="{args.note}"), '"id": "{args.note}"'),
        (lambda c: c.update(resource="note:{snapshot.text}"), '"resource"'),
        (lambda c: c["inverse"].update(tool="restore_note"), '"restore_note"'),
        (lambda c: c["inverse"]["arguments"].update(title="x"), '"title"'),
        (lambda c: c["snapshot"].update(arguments={"id": "{result.id}"}), '"{result.id}"'),
    ],
    ids=[
        "snapshot field that does not exist",
        "argument that does not exist",
        "snapshot where it is not at hand",
        "inverse tool the file does not list",
        "inverse argument its tool does not have",
        "result before the call",
    ],
)
def test_a_compensation_naming_what_does_not_exist_is_refused_with_its_file_and_line(
    tmp_path: Path, change: Any, marker: str
) -> None:
    bad = json.loads(json.dumps(NOTES))
    change(bad["tools"]["set_note"]["compensation"])
    path = written(tmp_path, bad)

    with pytest.raises(PolicyFileError) as caught:
        load_policy(tmp_path / "policy.json")

    assert caught.value.path == str(path)
    assert caught.value.line == line_of(path, marker)
    assert caught.value.message.startswith("tools.set_note.compensation.")


def test_a_compensation_without_any_read_is_refused(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(NOTES))
    del bad["tools"]["set_note"]["compensation"]["snapshot"]
    bad["tools"]["set_note"]["compensation"]["inverse"]["arguments"] = {"id": "{args.id}"}
    path = written(tmp_path, bad)

    with pytest.raises(PolicyFileError) as caught:
        load_policy(tmp_path / "policy.json")

    assert caught.value.line == line_of(path, '"compensation"')


def test_a_whole_placeholder_keeps_its_type_and_one_in_text_is_written_as_text() -> None:
    data = {"args": {"id": 7, "tags": ["a"]}, "snapshot": {"task": None}}

    assert render({"id": "{args.id}", "tags": "{args.tags}"}, data) == {"id": 7, "tags": ["a"]}
    assert render("task:{args.id}", data) == "task:7"
    assert render("{snapshot}", data) == {"task": None}
    with pytest.raises(TemplateError):
        render("{snapshot.task.title}", data)  # the snapshot found no task: nothing to render
