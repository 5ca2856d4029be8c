"""A registry file, or a policy using one, that can't be trusted is refused at load with file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hatp_journal.recorder.policy import PolicyFileError, load_policy
from hatp_journal.recorder.policy.registry import shipped
from hatp_journal.recorder.policy.registry_schema import registry_schema
from hatp_journal.toolkit.schema import render

ROOT = Path(__file__).parents[3]
SCHEMA = ROOT / "docs" / "schema" / "host-registry.schema.json"
SHIPPED = ROOT / "recorder" / "registry"

CRM = {
    "format": "hatp-registry/1",
    "server": {"id": "acme-crm", "package": "internal:acme-crm", "version": "4.2.0"},
    "status": "reviewed",
    "tools": {
        "export_report": {
            "class": "R4",
            "rationale": "Sends the report to an address outside the organisation.",
            "evidence": {"version": "4.2.0", "source": "crm/export.py:12"},
            "disclosure": True,
            "arguments": ["to"],
        },
        "archive_deal": {
            "class": "R1",
            "rationale": "Archived deals can be restored.",
            "evidence": {"version": "4.2.0", "source": "crm/deals.py:40"},
            "arguments": ["deal_id", "hard"],
            "rules": [
                {"argument": "hard", "equals": True, "class": "R4", "rationale": "A hard archive deletes."}
            ],
        },
    },
}


RULE = '"rules": ['  # a rule's problems are at its opening brace, the line after


def written(tmp_path: Path, registry: dict[str, Any], **policy: Any) -> Path:
    (tmp_path / "crm.json").write_text(json.dumps(registry, indent=2))
    body = {"registry": {"files": ["crm.json"], "servers": {"crm": "acme-crm"}}, **policy}
    (tmp_path / "policy.json").write_text(json.dumps(body, indent=2))
    return tmp_path / "policy.json"


def refused(path: Path) -> PolicyFileError:
    with pytest.raises(PolicyFileError) as caught:
        load_policy(path)
    return caught.value


def line_of(path: Path, text: str) -> int:
    """The last line holding ``text``."""
    return max(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_good_registry_file_classifies_its_server_with_its_argument_rules(tmp_path: Path) -> None:
    registry = load_policy(written(tmp_path, CRM)).host_registry()
    record = registry.record_for("crm")

    assert record is not None
    assert record.judge("archive_deal", {"deal_id": "D-1"}).rclass == "R1"  # type: ignore[union-attr]
    assert record.judge("archive_deal", {"hard": True}).rclass == "R4"  # type: ignore[union-attr]
    assert record.judge("archive_deal", {"hard": 1}).rclass == "R1"  # type: ignore[union-attr]


def test_an_absent_rule_passes_only_when_the_call_does_not_give_the_argument(tmp_path: Path) -> None:
    soft = json.loads(json.dumps(CRM))
    soft["tools"]["archive_deal"]["rules"] = [
        {"argument": "hard", "absent": True, "class": "R0", "rationale": "Without it nothing is deleted."}
    ]
    record = load_policy(written(tmp_path, soft)).host_registry().record_for("crm")

    assert record is not None
    assert record.judge("archive_deal", {"deal_id": "D-1"}).rclass == "R0"  # type: ignore[union-attr]
    assert record.judge("archive_deal", {"hard": False}).rclass == "R1"  # type: ignore[union-attr]
    assert record.judge("archive_deal", {"hard": None}).rclass == "R1"  # type: ignore[union-attr]


def test_a_policy_that_lowers_a_disclosure_is_refused_naming_the_line(tmp_path: Path) -> None:
    lowering = {
        "server": "crm",
        "tool": "export_report",
        "class": "R2",
        "by": "ops",
        "reason": "we trust them",
    }
    path = written(tmp_path, CRM, classOverrides=[lowering])

    error = refused(path)

    assert error.path == str(path)
    assert error.line == line_of(path, '"class": "R2"')
    assert "disclosure" in error.message


def test_raising_a_disclosure_or_lowering_another_tool_is_accepted(tmp_path: Path) -> None:
    olivia = "human://acme.com/person/olivia"  # holds the data owner's role in the example directory
    fine = [
        {"server": "crm", "tool": "export_report", "class": "R4", "by": "ops", "reason": "say it twice"},
        {"server": "crm", "tool": "archive_deal", "class": "R0", "by": olivia, "reason": "nightly backup"},
    ]
    path = written(tmp_path, CRM, classOverrides=fine, classAuthority="human://acme.com/role/data-owner")

    loaded = load_policy(path, directory=ROOT / "docs" / "examples" / "directory-classes.json")

    assert [override.rclass for override in loaded.class_overrides] == ["R4", "R0"]


@pytest.mark.parametrize(
    ("change", "marker"),
    [
        (lambda tools: tools["archive_deal"].update({"class": "R5"}), '"class": "R5"'),
        (lambda tools: tools["archive_deal"]["rules"][0].update({"is": "sql-single-select"}), RULE),
        (lambda tools: tools["archive_deal"]["rules"][0].update({"equals": None}), RULE),
        (lambda tools: tools["archive_deal"]["rules"][0].update({"absent": True}), RULE),
        (
            lambda tools: tools["archive_deal"]["rules"][0].update({"equals": None, "absent": False}),
            '"absent": false',
        ),
        (lambda tools: tools["archive_deal"]["rules"][0].update({"is": "regex"}), '"is": "regex"'),
        (lambda tools: tools["archive_deal"]["rules"][0].update({"argument": "hrad"}), '"archive_deal"'),
        (lambda tools: tools["archive_deal"].update({"disclosure": True}), '"archive_deal"'),
        (lambda tools: tools["archive_deal"].update({"evidence": {"version": "4.2.0"}}), '"evidence"'),
    ],
    ids=[
        "unknown class",
        "two tests",
        "no test",
        "equals and absent",
        "absent false",
        "unknown test",
        "unknown argument",
        "disclosure not R4",
        "no source",
    ],
)
def test_a_bad_registry_file_is_refused_with_its_file_and_line(
    tmp_path: Path, change: Any, marker: str
) -> None:
    bad = json.loads(json.dumps(CRM))
    change(bad["tools"])
    written(tmp_path, bad)

    error = refused(tmp_path / "policy.json")

    assert error.path == str(tmp_path / "crm.json")
    assert error.line == line_of(tmp_path / "crm.json", marker) + (marker == RULE)


def test_a_duplicate_tool_in_a_registry_file_is_refused_at_its_line(tmp_path: Path) -> None:
    written(tmp_path, CRM)
    text = (tmp_path / "crm.json").read_text().replace('"archive_deal"', '"export_report"')
    (tmp_path / "crm.json").write_text(text)

    error = refused(tmp_path / "policy.json")

    assert error.path == str(tmp_path / "crm.json")
    assert "duplicate" in error.message


def test_a_missing_registry_file_is_refused_at_the_policy_line_that_names_it(tmp_path: Path) -> None:
    path = written(tmp_path, CRM)
    (tmp_path / "crm.json").unlink()

    error = refused(path)

    assert error.path == str(path)
    assert error.line == line_of(path, '"crm.json"')


def test_a_server_mapped_to_a_registry_nobody_ships_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"registry": {"servers": {"db": "mcp-server-sqlite3"}}}, indent=2))

    error = refused(path)

    assert error.line == line_of(path, '"db"')


def test_a_policy_giving_both_kinds_and_classes_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"autonomy": {"read": "allow", "classes": {"R0": "allow"}}}, indent=2))

    assert refused(path).line == line_of(path, '"autonomy"')


@pytest.mark.parametrize("action", ["allow", "ask"])
def test_a_policy_that_lets_r4_be_anything_but_never_autonomous_is_refused_at_its_line(
    tmp_path: Path, action: str
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"autonomy": {"classes": {"R0": "allow", "R4": action}}}, indent=2))

    assert refused(path).line == line_of(path, '"R4"')


def test_the_shipped_registry_files_are_reviewed_and_name_a_source_for_every_tool() -> None:
    records = shipped()

    assert set(records) == {
        "@modelcontextprotocol/server-everything",
        "@modelcontextprotocol/server-filesystem",
        "@modelcontextprotocol/server-memory",
        "@playwright/mcp",
        "mcp-server-fetch",
        "mcp-server-sqlite",
    }
    for record in records.values():
        assert record.file.status == "reviewed"
        assert all(entry.evidence.source and entry.rationale for entry in record.file.tools.values())


def test_the_committed_registry_schema_equals_the_code_and_the_shipped_files_follow_it() -> None:
    committed = SCHEMA.read_text(encoding="utf-8")
    schema = json.loads(committed)

    assert committed == render(registry_schema()), "run `make schema` and commit docs/schema/"
    for path in sorted(SHIPPED.glob("*.json")):
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**CRM, "status": "approved"}, schema)


GREETING = {
    "class": "R0",
    "rationale": "Returns a fixed message.",
    "evidence": {"version": "4.2.0", "source": "crm/prompts.py:3"},
}


@pytest.mark.parametrize(
    ("prompt", "marker"),
    [
        ({**GREETING, "class": "R9"}, '"class": "R9"'),
        ({**GREETING, "disclosure": True}, '"greeting"'),
        ({**GREETING, "evidence": {"version": "4.2.0"}}, '"evidence"'),
        ({**GREETING, "rules": []}, '"rules"'),
    ],
    ids=["unknown class", "disclosure not R4", "no source", "argument rules (tools only)"],
)
def test_a_bad_prompt_entry_is_refused_with_its_file_and_line(
    tmp_path: Path, prompt: dict[str, Any], marker: str
) -> None:
    written(tmp_path, {**CRM, "prompts": {"greeting": prompt}})

    error = refused(tmp_path / "policy.json")

    assert error.path == str(tmp_path / "crm.json")
    assert error.line == line_of(tmp_path / "crm.json", marker)


def test_a_prompt_entry_classes_getting_that_prompt_and_no_other(tmp_path: Path) -> None:
    written(tmp_path, {**CRM, "prompts": {"greeting": GREETING}})
    record = load_policy(tmp_path / "policy.json").host_registry().record_for("crm")
    assert record is not None

    got = record.judge_prompt("greeting")

    assert got is not None
    assert (got.rclass, got.rule, got.evidence["prompt"]) == ("R0", "registry", "greeting")
    assert record.judge_prompt("export_report") is None  # a tool's name is not a prompt's


NOTE = {
    "class": "R0",
    "rationale": "Returns a note.",
    "evidence": {"version": "4.2.0", "source": "crm/notes.py:3"},
}


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("crm://files/{+path}", "only {NAME} placeholders"),
        ("crm://files/{a,b}", "only {NAME} placeholders"),
        ("crm://files/{path*}", "only {NAME} placeholders"),
        ("crm://files/{path", "only {NAME} placeholders"),
        ("files/{name}", "starts with its scheme"),
        ("{scheme}://x", "starts with its scheme"),
        ("crm://files/../secret", "'..' path segment"),
        ("crm://files/\u0007bell", "U+0007"),
        ("crm://files/a name", "U+0020"),
        ("crm://{a}/{a}", "named twice"),
    ],
    ids=["reserved expansion", "list", "explode", "unclosed", "no scheme", "scheme as placeholder",
         "dot segment", "control character", "space", "placeholder twice"],
)  # fmt: skip
def test_a_resource_name_that_could_match_too_much_is_refused_at_its_line(
    tmp_path: Path, key: str, said: str
) -> None:
    written(tmp_path, {**CRM, "resources": {"crm://today": NOTE, key: NOTE}})

    error = refused(tmp_path / "policy.json")

    assert error.path == str(tmp_path / "crm.json")
    [problem] = error.problems
    assert said in problem.message
    assert problem.line == line_of(tmp_path / "crm.json", json.dumps(key)[:12])


def test_a_resource_entry_that_is_a_disclosure_but_not_r4_is_refused_at_its_line(tmp_path: Path) -> None:
    written(tmp_path, {**CRM, "resources": {"crm://today": {**NOTE, "disclosure": True}}})

    error = refused(tmp_path / "policy.json")

    assert error.line == line_of(tmp_path / "crm.json", '"crm://today"')


def judged(tmp_path: Path, resources: dict[str, Any], uri: str) -> tuple[str, str | None] | None:
    written(tmp_path, {**CRM, "resources": resources})
    record = load_policy(tmp_path / "policy.json").host_registry().record_for("crm")
    assert record is not None
    got = record.judge_resource(uri)
    return None if got is None else (got.rclass, str(got.evidence["resource"]))


def test_a_template_placeholder_matches_one_plain_segment_and_nothing_else(tmp_path: Path) -> None:
    files = {"crm://files/{name}": NOTE}

    assert judged(tmp_path, files, "crm://files/q3.md") == ("R0", "crm://files/{name}")
    for uri in (
        "crm://files/a/b",
        "crm://files/",
        "crm://files/..",
        "crm://files/.",
        "crm://files/%2e%2e",
        "crm://files/a%2Fb",
        "crm://files/a\u0000b",
        "crm://files/a\nb",
        "crm://files/a\u0085b",
        "crm://files/q3.md?x=1",
        "CRM://files/q3.md",
    ):
        assert judged(tmp_path, files, uri) is None, uri


def test_a_uri_named_exactly_outranks_a_template_and_overlapping_templates_give_the_worst(
    tmp_path: Path,
) -> None:
    export = {**NOTE, "class": "R4", "disclosure": True}
    resources = {"crm://files/{name}": NOTE, "crm://{folder}/{name}": export, "crm://files/today": NOTE}

    assert judged(tmp_path, resources, "crm://files/q3.md") == ("R4", "crm://{folder}/{name}")
    assert judged(tmp_path, resources, "crm://files/today") == ("R0", "crm://files/today")
    assert judged(tmp_path, resources, "crm://other/q3.md") == ("R4", "crm://{folder}/{name}")
