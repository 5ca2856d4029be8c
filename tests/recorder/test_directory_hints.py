"""Ids are compared whole; a short name only earns a hint naming the full id."""

from __future__ import annotations

from hatp_journal.recorder.directory import Directory
from hatp_journal.toolkit.signing import SigningKey, b64url


def directory(*ids: str) -> Directory:
    key = b64url(SigningKey.generate().public.raw())
    return Directory.model_validate({"people": [{"id": i, "roles": [], "publicKey": key} for i in ids]})


def test_a_short_name_matching_one_person_is_refused_with_the_full_id_as_a_hint() -> None:
    people = directory("human://acme.com/lee", "human://acme.com/dana")

    assert people.person("lee") is None
    assert people.not_listed("lee") == "lee is not in the directory (did you mean human://acme.com/lee?)"


def test_a_short_name_matching_two_people_gets_no_guess() -> None:
    people = directory("human://acme.com/lee", "human://globex.com/lee")

    assert people.not_listed("lee") == "lee is not in the directory"


def test_the_refusal_recorded_for_a_decision_carries_the_hint() -> None:
    people = directory("human://acme.com/lee")
    key = SigningKey.generate().public

    assert people.may_decide("lee", "human://acme.com/role/team-lead", key) == (
        "lee is not in the directory (did you mean human://acme.com/lee?)"
    )
