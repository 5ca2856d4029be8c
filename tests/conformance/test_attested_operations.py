"""End to end: the attestation the suite signed for the CRM lets requireVerified allow exactly the
operations it verified, as the CRM declares them, for the CRM's key; anything else stays on ask."""

from __future__ import annotations

import json
from pathlib import Path

from conformance_helpers import CliRun

from hatp_journal.recorder.policy import CallFacts, MoneyLedger, decide, load_policy
from hatp_journal.servers.crm import build
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.wire import Declaration, parse_wire_time


def test_the_suites_attestation_lets_require_verified_allow_exactly_the_verified_operations(
    crm_by_cli: CliRun, tmp_path: Path
) -> None:
    (tmp_path / "crm.attestation.json").write_text(json.dumps(crm_by_cli.attestation))
    trust = {"signer": crm_by_cli.signer.public.wire().wire(), "files": ["crm.attestation.json"]}
    (tmp_path / "policy.json").write_text(
        json.dumps({"autonomy": {"compensate": "allow", "requireVerified": True, "attestations": trust}})
    )
    policy = load_policy(tmp_path / "policy.json")
    _, journal = build(tmp_path / "crm.db", crm_by_cli.crm_key)
    after_the_run = parse_wire_time(crm_by_cli.attestation["issuedAt"])

    def action(
        tool: str,
        *,
        declared_as: str | None = None,
        key: SigningKey = crm_by_cli.crm_key,
        declaration: Declaration | None = None,
    ) -> str:
        declaration = declaration or journal.declaration(declared_as or tool)
        facts = CallFacts.from_declaration(
            declaration, server="crm", tool=tool, at=after_the_run, server_keys=frozenset({key.kid})
        )
        return decide(policy, facts, MoneyLedger()).action

    assert action("update_deal") == "allow"
    assert action("charge_order") == "allow"
    assert action("delete_deal", declared_as="update_deal") == "ask"  # undoable, but never checked
    assert action("update_deal", key=SigningKey.generate()) == "ask"
    update_deal = journal.declaration("update_deal")
    assert update_deal.undo is not None
    shorter = update_deal.model_copy(update={"undo": update_deal.undo.model_copy(update={"window": "P1D"})})
    assert action("update_deal", declaration=shorter) == "ask"  # declared otherwise since the run


def test_the_attestation_binds_each_operation_to_the_digest_of_its_declaration_in_tools_list(
    crm_by_cli: CliRun, tmp_path: Path
) -> None:
    _, journal = build(tmp_path / "crm.db", crm_by_cli.crm_key)

    attested = {op["tool"]: op["declarationDigest"] for op in crm_by_cli.attestation["operations"]}
    reported = {op.tool: op.declaration_digest for op in crm_by_cli.result.operations}

    assert attested == {tool: journal.declaration(tool).digest() for tool in attested}
    assert {tool: reported[tool] for tool in attested} == attested
