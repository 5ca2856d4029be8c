"""A class override that lowers a class names a person of the directory holding the role the
policy names for it, or the policy is refused at the line of its ``by``; a call it lets through
is reported (``NOTIFY``). Raising a class needs nobody."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.recorder.policy import CallFacts, MoneyLedger, PolicyFileError, decide, load_policy

ROOT = Path(__file__).parents[3]
PEOPLE = ROOT / "docs" / "examples" / "directory-classes.json"
OLIVIA = "human://acme.com/person/olivia"  # holds the data owner's role
LEE = "human://acme.com/person/lee"  # holds the team lead's role only
DATA_OWNER = "human://acme.com/role/data-owner"
SQLITE = {"servers": {"db": "mcp-server-sqlite"}}
AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def written(tmp_path: Path, override: dict[str, Any], **policy: Any) -> Path:
    body = {
        "autonomy": {"classes": {"R0": "allow", "R1": "allow", "R2": "allow", "R3": "allow"}},
        "registry": SQLITE,
        "classOverrides": [{"server": "db", "reason": "nightly snapshots", **override}],
        **policy,
    }
    (tmp_path / "policy.json").write_text(json.dumps(body, indent=2))
    return tmp_path / "policy.json"


def refused(path: Path, directory: Path | None = PEOPLE) -> PolicyFileError:
    with pytest.raises(PolicyFileError) as caught:
        load_policy(path, directory=directory)
    return caught.value


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


LOWERING = {"tool": "write_query", "class": "R1"}  # the registry says R4


@pytest.mark.parametrize(
    ("by", "authority", "said"),
    [
        ("human://acme.com/person/mallory", DATA_OWNER, "is not in the directory"),
        (LEE, DATA_OWNER, f"does not hold {DATA_OWNER}"),
        (DATA_OWNER, DATA_OWNER, "is not in the directory"),  # a role is nobody's decision
        (OLIVIA, None, "give classAuthority"),
    ],
    ids=["not-in-the-directory", "without-the-role", "a-role-not-a-person", "no-role-named"],
)
def test_an_override_lowering_a_class_without_a_person_holding_the_role_is_refused_at_its_by_line(
    tmp_path: Path, by: str, authority: str | None, said: str
) -> None:
    more = {"classAuthority": authority} if authority else {}
    path = written(tmp_path, {**LOWERING, "by": by}, **more)

    error = refused(path)

    assert error.path == str(path)
    assert error.line == line_of(path, '"by"')
    assert said in error.message
    assert "classOverrides.0.by: lowering db/write_query to R1" in error.message


def test_an_override_lowering_a_class_with_no_directory_to_check_is_refused(tmp_path: Path) -> None:
    path = written(tmp_path, {**LOWERING, "by": OLIVIA}, classAuthority=DATA_OWNER)

    assert "[recorder] directory is not set" in refused(path, directory=None).message


def test_the_undo_authority_holds_the_class_authority_when_the_policy_names_no_other(tmp_path: Path) -> None:
    path = written(tmp_path, {**LOWERING, "by": LEE}, undoAuthority="human://acme.com/role/team-lead")

    assert load_policy(path, directory=PEOPLE).class_overrides[0].by == LEE


@pytest.mark.parametrize(
    "override",
    [
        {"tool": "list_tables", "class": "R2"},  # R0 in the registry: raised
        {"tool": "write_query", "class": "R4"},  # as the registry says
    ],
)
def test_an_override_that_does_not_lower_needs_nobody(tmp_path: Path, override: dict[str, Any]) -> None:
    path = written(tmp_path, {**override, "by": "ops"})

    assert load_policy(path).class_overrides[0].by == "ops"


def test_an_override_for_a_tool_the_registry_does_not_list_may_lower_it_so_it_needs_a_person(
    tmp_path: Path,
) -> None:
    path = written(tmp_path, {"server": "notes", "tool": "wipe", "class": "R3", "by": "ops"})

    assert "needs a person" in refused(path, directory=None).message


def test_every_call_a_lowering_lets_through_is_reported_with_who_lowered_it(tmp_path: Path) -> None:
    path = written(tmp_path, {**LOWERING, "by": OLIVIA}, classAuthority=DATA_OWNER)
    policy = load_policy(path, directory=PEOPLE)
    facts = CallFacts.from_declaration(
        None, server="db", tool="write_query", at=AT, arguments={"query": "DELETE FROM t"}, run="r"
    )

    decision = decide(policy, facts, MoneyLedger())

    assert decision.action == "allow"
    assert [(r.code, r.data.get("by"), r.data.get("from")) for r in decision.reasons] == [
        ("NOTIFY", OLIVIA, "R4")
    ]
    assert decision.reversibility is not None
    assert (decision.reversibility.rclass, decision.reversibility.source) == ("R1", "host-override")
