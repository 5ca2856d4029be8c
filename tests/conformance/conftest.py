"""Shared runs of the suite: each server starts once and its result is read by several tests."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from conformance_helpers import CliRun, conformance_cli, crm

from hatp_journal.conformance import SuiteResult
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import SigningKey


@pytest.fixture(scope="session")
def crm_by_cli(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """The CRM checked from the command line once, with a JSON result and a signed attestation."""
    folder = tmp_path_factory.mktemp("crm-cli")
    SigningKey.generate().save(folder / "crm.key")
    ran = conformance_cli(
        "--target", crm(folder / "crm.db", folder / "crm.key"),
        "--json", "result.json",
        "--attest", "crm.attestation.json", "--attest-key", "signer.key",
        cwd=folder,
    )  # fmt: skip
    assert (folder / "result.json").exists(), ran.stderr
    return CliRun(
        status=ran.returncode,
        stdout=ran.stdout,
        result=SuiteResult.model_validate_json((folder / "result.json").read_bytes()),
        attestation=json.loads((folder / "crm.attestation.json").read_bytes()),
        signer=SigningKey.from_file(folder / "signer.key"),
        crm_key=SigningKey.from_file(folder / "crm.key"),
    )


@pytest.fixture(scope="module")
def mail_sink_for_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailSink]:
    """A real SMTP sink for the calendar's and the email server's mail, shared by a module."""
    with MailSink(tmp_path_factory.mktemp("mail") / "maildir") as sink:
        yield sink
