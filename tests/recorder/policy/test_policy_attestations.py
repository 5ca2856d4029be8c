"""requireVerified reads conformance attestations: an attested operation is allowed, everything
else stays on ask with a stable reason (not attested, forged, stale, another key, kind or
declaration)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.conformance.attestation import attest
from hatp_journal.conformance.results import CheckOutcome, OperationReport, SuiteResult
from hatp_journal.conformance.runner import suite_info
from hatp_journal.recorder.policy import (
    AttestationProblem,
    CallFacts,
    MoneyLedger,
    PolicyFileError,
    decide,
    load_policy,
)
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.wire import Declaration, UndoDeclaration

ISSUED = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
CRM = SigningKey.generate()
SIGNER = SigningKey.generate()
DAY = 24 * 3600


def declared(
    kind: str = "compensate", window: str = "P7D", side_effects: tuple[str, ...] = ()
) -> Declaration:
    """A declaration of ``kind`` (compensate: with ``window`` and ``side_effects``)."""
    if kind == "compensate":
        undo = UndoDeclaration(kind="compensate", window=window, side_effects=list(side_effects))
        return Declaration(undo=undo)
    return Declaration(undo=UndoDeclaration(kind="none"), reason="delivered to external recipients")


DECLARED = declared()
"""What every tool of these calls declares: compensate within 7 days."""


def attestation(
    operations: dict[str, str],
    *,
    server_key: SigningKey = CRM,
    signer: SigningKey = SIGNER,
    declarations: dict[str, Declaration | None] | None = None,
) -> Any:
    """A signed attestation that ``operations`` (tool → kind) passed, for ``server_key``, as declared
    in ``declarations`` (default: :func:`declared` of the kind)."""
    read = {tool: declared(kind) for tool, kind in operations.items()} | (declarations or {})
    digests = {
        tool: None if declaration is None else declaration.digest() for tool, declaration in read.items()
    }
    result = SuiteResult(
        suite=suite_info(),
        target="hatp-crm serve",
        kind="server",
        server="crm://acme",
        server_keys=[server_key.public.wire()],
        started_at="2026-11-01T08:59:00Z",
        finished_at="2026-11-01T09:00:00Z",
        outcomes=[CheckOutcome(requirement="J-4.2", operation=tool, outcome="passed") for tool in operations],
        operations=[
            OperationReport(tool=tool, kind=kind, verified=True, declaration_digest=digests[tool])  # type: ignore[arg-type]
            for tool, kind in operations.items()
        ],
        passed=True,
    )
    return attest(result, signer, ISSUED).wire()


def policy_with(tmp_path: Path, *documents: Any, max_age: int = 30 * DAY) -> Path:
    folder = tmp_path / "attestations"
    folder.mkdir(exist_ok=True)
    files = []
    for index, document in enumerate(documents):
        (folder / f"a{index}.json").write_text(json.dumps(document))
        files.append(f"attestations/a{index}.json")
    policy = {
        "autonomy": {
            "compensate": "allow",
            "requireVerified": True,
            "attestations": {"signer": SIGNER.public.wire().wire(), "files": files, "maxAgeSeconds": max_age},
        }
    }
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy, indent=2))
    return path


def call(
    tool: str,
    *,
    at: datetime = ISSUED + timedelta(days=1),
    keys: frozenset[str] | None = None,
    declaration: Declaration = DECLARED,
) -> CallFacts:
    return CallFacts.from_declaration(
        declaration,
        server="crm",
        tool=tool,
        at=at,
        server_keys=frozenset({CRM.kid}) if keys is None else keys,
    )


def verdict(policy: Path, facts: CallFacts) -> tuple[str, list[str], dict[str, Any]]:
    decision = decide(load_policy(policy), facts, MoneyLedger())
    reasons = [reason.code.value for reason in decision.reasons]
    data = {k: v for reason in decision.reasons for k, v in reason.data.items()}
    return decision.action, reasons, data


def test_without_an_attestation_a_compensate_call_stays_on_ask(tmp_path: Path) -> None:
    policy = policy_with(tmp_path, attestation({"update_deal": "compensate"}))

    action, reasons, data = verdict(policy, call("charge_order"))

    assert (action, reasons, data["attestation"]) == ("ask", ["NOT_VERIFIED"], "NOT_ATTESTED")


def test_an_attested_operation_is_allowed_and_the_reason_names_the_attestation(tmp_path: Path) -> None:
    policy = policy_with(tmp_path, attestation({"update_deal": "compensate"}))

    action, reasons, data = verdict(policy, call("update_deal"))

    assert (action, reasons) == ("allow", ["VERIFIED"])
    assert str(data["source"]).endswith("attestations/a0.json")
    assert str(data["digest"]).startswith("sha256:")


def test_an_attestation_signed_by_anyone_but_the_pinned_signer_is_refused(tmp_path: Path) -> None:
    forged = attestation({"update_deal": "compensate"}, signer=SigningKey.generate())
    policy = policy_with(tmp_path, forged)

    action, reasons, data = verdict(policy, call("update_deal"))

    assert (action, reasons, data["attestation"]) == ("ask", ["NOT_VERIFIED"], "FORGED")
    assert str(data["source"]).endswith("attestations/a0.json")


def test_an_attestation_edited_after_signing_vouches_for_nothing(tmp_path: Path) -> None:
    edited = attestation({"update_deal": "compensate"})
    edited["operations"].append({"tool": "charge_order", "kind": "compensate", "requirements": ["J-4.2"]})
    policy = policy_with(tmp_path, edited)

    assert verdict(policy, call("charge_order"))[2]["attestation"] == "FORGED"
    assert verdict(policy, call("update_deal"))[2]["attestation"] == "FORGED"


def test_an_attestation_older_than_the_maximum_age_is_stale(tmp_path: Path) -> None:
    policy = policy_with(tmp_path, attestation({"update_deal": "compensate"}), max_age=DAY)

    on_the_day = verdict(policy, call("update_deal", at=ISSUED + timedelta(days=1)))
    after = verdict(policy, call("update_deal", at=ISSUED + timedelta(days=1, seconds=1)))

    assert on_the_day[0] == "allow"
    assert (after[0], after[2]["attestation"]) == ("ask", "STALE")


def test_an_attestation_for_another_server_key_is_refused(tmp_path: Path) -> None:
    policy = policy_with(tmp_path, attestation({"update_deal": "compensate"}))

    rotated = verdict(policy, call("update_deal", keys=frozenset({SigningKey.generate().kid})))
    unaware = verdict(policy, call("update_deal", keys=frozenset()))

    assert (rotated[0], rotated[2]["attestation"]) == ("ask", "OTHER_SERVER_KEY")
    assert unaware[2]["attestation"] == "OTHER_SERVER_KEY"


def test_an_attestation_issued_after_the_call_or_for_another_kind_of_undo_is_refused(tmp_path: Path) -> None:
    policy = policy_with(
        tmp_path, attestation({"update_deal": "none"}), attestation({"charge_order": "compensate"})
    )

    other_kind = verdict(policy, call("update_deal"))
    before_issue = verdict(policy, call("charge_order", at=ISSUED - timedelta(hours=1)))

    assert other_kind[2]["attestation"] == "OTHER_KIND"
    assert before_issue[2]["attestation"] == "NOT_YET_VALID"


def test_an_attestation_of_the_declaration_before_it_changed_is_refused(tmp_path: Path) -> None:
    policy = policy_with(tmp_path, attestation({"update_deal": "compensate"}))
    shorter = declared(window="P1D")
    noisier = declared(side_effects=("the customer is told",))

    as_attested = verdict(policy, call("update_deal"))
    shortened = verdict(policy, call("update_deal", declaration=shorter))
    noisy = verdict(policy, call("update_deal", declaration=noisier))

    assert as_attested[0] == "allow"
    assert (shortened[0], shortened[1], shortened[2]["attestation"]) == (
        "ask",
        ["NOT_VERIFIED"],
        "OTHER_DECLARATION",
    )
    assert str(shortened[2]["source"]).endswith("attestations/a0.json")
    assert (noisy[0], noisy[2]["attestation"]) == ("ask", "OTHER_DECLARATION")


def test_an_attestation_that_binds_no_declaration_verifies_nothing(tmp_path: Path) -> None:
    policy = policy_with(
        tmp_path, attestation({"update_deal": "compensate"}, declarations={"update_deal": None})
    )

    action, reasons, data = verdict(policy, call("update_deal"))

    assert (action, reasons, data["attestation"]) == ("ask", ["NOT_VERIFIED"], "OTHER_DECLARATION")


def test_facts_without_a_declaration_digest_match_no_attestation(tmp_path: Path) -> None:
    policy = policy_with(tmp_path, attestation({"update_deal": "compensate"}))
    undigested = CallFacts(
        server="crm",
        tool="update_deal",
        kind="compensate",
        via="api",
        window_seconds=7 * DAY,
        at=ISSUED + timedelta(days=1),
        server_keys=frozenset({CRM.kid}),
    )

    assert verdict(policy, undigested)[2]["attestation"] == "OTHER_DECLARATION"


def test_one_good_attestation_among_bad_ones_is_enough(tmp_path: Path) -> None:
    forged = attestation({"update_deal": "compensate"}, signer=SigningKey.generate())
    policy = policy_with(tmp_path, forged, attestation({"update_deal": "compensate"}))

    assert verdict(policy, call("update_deal"))[0] == "allow"


def test_without_require_verified_attestations_change_nothing(tmp_path: Path) -> None:
    path = policy_with(tmp_path, attestation({"update_deal": "compensate"}))
    document = json.loads(path.read_text())
    document["autonomy"]["requireVerified"] = False
    path.write_text(json.dumps(document))

    assert verdict(path, call("charge_order")) == ("allow", [], {})


@pytest.mark.parametrize(
    "content",
    [None, "folder", b"{}", b"not json", b"", b'{"issuedAt": "\xff"}', b"[" * 100_000 + b"]" * 100_000],
    ids=["missing", "folder", "not-an-attestation", "not-json", "empty", "not-utf8", "too-deep"],
)
def test_an_attestation_file_that_cannot_be_read_stops_the_policy_loading_at_its_line(
    tmp_path: Path, content: bytes | str | None
) -> None:
    path = policy_with(tmp_path, attestation({"update_deal": "compensate"}), {})
    target = tmp_path / "attestations" / "a1.json"
    target.unlink()
    if content == "folder":
        target.mkdir()
    elif isinstance(content, bytes):
        target.write_bytes(content)

    with pytest.raises(PolicyFileError) as refused:
        load_policy(path)

    line = path.read_text().splitlines()[refused.value.line - 1]
    assert "attestations/a1.json" in line
    assert refused.value.message.startswith(str(target))


def test_a_signer_key_whose_kid_does_not_name_it_is_refused_at_load(tmp_path: Path) -> None:
    path = policy_with(tmp_path, attestation({"update_deal": "compensate"}))
    document = json.loads(path.read_text())
    document["autonomy"]["attestations"]["signer"]["kid"] = SigningKey.generate().kid
    path.write_text(json.dumps(document, indent=2))

    with pytest.raises(PolicyFileError, match="signer") as refused:
        load_policy(path)

    assert '"signer"' in path.read_text().splitlines()[refused.value.line - 1]


PROVOKED: dict[str, tuple[Any, CallFacts]] = {
    "NOT_ATTESTED": (attestation({"update_deal": "compensate"}), call("charge_order")),
    "FORGED": (attestation({"update_deal": "compensate"}, signer=SigningKey.generate()), call("update_deal")),
    "OTHER_SERVER_KEY": (
        attestation({"update_deal": "compensate"}, server_key=SigningKey.generate()),
        call("update_deal"),
    ),
    "OTHER_KIND": (attestation({"update_deal": "none"}), call("update_deal")),
    "OTHER_DECLARATION": (
        attestation({"update_deal": "compensate"}),
        call("update_deal", declaration=declared(window="P1D")),
    ),
    "STALE": (
        attestation({"update_deal": "compensate"}),
        call("update_deal", at=ISSUED + timedelta(days=31)),
    ),
    "NOT_YET_VALID": (
        attestation({"update_deal": "compensate"}),
        call("update_deal", at=ISSUED - timedelta(hours=1)),
    ),
}
"""For each AttestationProblem, one attestation and one call that provoke it alone."""


def test_every_attestation_problem_has_a_call_that_provokes_it() -> None:
    assert set(PROVOKED) == {problem.value for problem in AttestationProblem}


@pytest.mark.parametrize("problem", sorted(PROVOKED))
def test_each_attestation_problem_keeps_the_call_on_ask_with_its_code_in_the_reason(
    tmp_path: Path, problem: str
) -> None:
    document, facts = PROVOKED[problem]

    action, reasons, data = verdict(policy_with(tmp_path, document), facts)

    assert (action, reasons, data["attestation"]) == ("ask", ["NOT_VERIFIED"], problem)
