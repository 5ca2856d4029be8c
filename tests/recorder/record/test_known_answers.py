"""The published known-answer files (docs/examples/d881/) agree with the code and the docs.

A genuine Run Record exported from the D-881 story verifies; each tampered copy is reported with
exactly the codes ``expected.json`` names (problems and flagged ones), by ``verify_record`` and by
``hatp-recorder verify`` in this process and as its own, with every key and the directory pinned
and with nothing pinned (trust on first use). Every code the verifier has is documented, and every
documented code is raised by at least one of these files.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record import RECORD_FORMAT, Check, verify_record
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import PublicKey

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples" / "d881"
DOC = ROOT / "docs" / "run-record.md"
EXPECTED: list[dict[str, Any]] = json.loads((EXAMPLES / "tampered" / "expected.json").read_text("utf-8"))
SERVERS = ("calendar", "crm", "email")


def key(name: str) -> VerifyKey:
    return VerifyKey.from_wire(PublicKey.model_validate_json((EXAMPLES / f"{name}.pub.json").read_bytes()))


def directory_file(case: dict[str, Any] | None) -> Path:
    """The directory pinned for a case: the genuine one unless the case names its own."""
    named = case.get("directory") if case else None
    return EXAMPLES / "tampered" / named if named else EXAMPLES / "directory.json"


def pinned(head: bool, case: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything a careful verifier pins: the Recorder's key, every server's, the directory."""
    recorder = key("recorder")
    return {
        "recorder_keys": {recorder.kid: recorder},
        "server_keys": {server: {key(server).kid: key(server)} for server in SERVERS},
        "directory": Directory.load(directory_file(case)),
        "latest_head": json.loads((EXAMPLES / "head.json").read_text("utf-8")) if head else None,
    }


def cli_pins(head: bool, case: dict[str, Any] | None = None) -> list[str]:
    pins = [
        "--recorder-key",
        str(EXAMPLES / "recorder.pub.json"),
        "--directory",
        str(directory_file(case)),
    ]
    for server in SERVERS:
        pins += ["--server-key", f"{server}={EXAMPLES / f'{server}.pub.json'}"]
    return pins + (["--head", str(EXAMPLES / "head.json")] if head else [])


def printed_codes(output: str) -> set[str]:
    return {line.split("\t")[1] for line in output.splitlines() if line.count("\t") >= 2}


def test_the_genuine_d881_record_verifies_pinned_and_from_the_file_and_carries_no_token() -> None:
    data = (EXAMPLES / "run-record.json").read_bytes()

    careful = verify_record(data, **pinned(head=True))
    trusting = verify_record(data)

    assert verify_record(EXAMPLES / "run-record.json", **pinned(head=True)) == careful
    assert careful.ok, careful.problems
    assert careful.trusted_from_file == []
    assert trusting.ok, trusting.problems
    assert "the Recorder's key" in trusting.trusted_from_file
    assert careful.receipts_checked == 9  # 3 calls, 2 checks, 2 undo answers, 2 in the Reversal Record
    assert b'compensationToken"' not in data
    assert b"ctk_" not in data


def test_the_genuine_record_fits_the_published_schema_as_an_outside_validator_reads_it() -> None:
    schema = json.loads((ROOT / "docs" / "schema" / "run-record.schema.json").read_text("utf-8"))
    record = json.loads((EXAMPLES / "run-record.json").read_bytes())

    jsonschema.validate(record, schema)
    assert record["format"] == RECORD_FORMAT


@pytest.mark.parametrize("case", EXPECTED, ids=[case["file"] for case in EXPECTED])
def test_each_tampered_copy_is_reported_with_exactly_its_codes(case: dict[str, Any]) -> None:
    data = (EXAMPLES / "tampered" / case["file"]).read_bytes()

    careful = verify_record(data, **pinned(case["withHead"], case))
    trusting = verify_record(data, latest_head=pinned(head=True)["latest_head"] if case["withHead"] else None)

    assert sorted(careful.codes()) == case["codes"]
    assert sorted(careful.flagged_codes()) == case["flagged"]
    assert sorted(trusting.codes()) == case["codesFromFile"]
    assert all(problem.entry is None or re.fullmatch(r"e\d+", problem.entry) for problem in careful.problems)
    # The file read one entry at a time, as `hatp-recorder verify` reads it: the very same report.
    assert verify_record(EXAMPLES / "tampered" / case["file"], **pinned(case["withHead"], case)) == careful


@pytest.mark.parametrize("case", EXPECTED, ids=[case["file"] for case in EXPECTED])
def test_the_cli_reports_each_tampered_copy_with_its_codes_and_exit_1(
    case: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["verify", str(EXAMPLES / "tampered" / case["file"]), *cli_pins(case["withHead"], case)])

    assert status == 1
    assert sorted(printed_codes(capsys.readouterr().out)) == sorted({*case["codes"], *case["flagged"]})


def test_every_forgery_is_reported_the_same_by_the_cli_as_its_own_process() -> None:
    """One `hatp-recorder verify` process per file would be slow: one process verifies them all
    through the console script's entry point, each with its pins, and says what each printed."""
    script = (
        "import contextlib, io, json, sys\n"
        "from hatp_journal.recorder.cli.command_line import main\n"
        "results = []\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        status = main(argv)\n"
        "    results.append([status, out.getvalue()])\n"
        "print(json.dumps(results))\n"
    )
    runs = [["verify", str(EXAMPLES / "tampered" / c["file"]), *cli_pins(c["withHead"], c)] for c in EXPECTED]
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(runs)], capture_output=True, text=True, check=True
    )

    for case, (status, output) in zip(EXPECTED, json.loads(done.stdout), strict=True):
        assert status == 1, case["file"]
        assert sorted(printed_codes(output)) == sorted({*case["codes"], *case["flagged"]}), case["file"]


def test_a_flagged_problem_alone_fails_the_cli_unless_it_is_accepted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    forged = str(EXAMPLES / "tampered" / "unresolved-summary-forged.json")

    refused = main(["verify", forged, *cli_pins(head=False)])
    refused_output = capsys.readouterr().out
    accepted = main(["verify", forged, *cli_pins(head=False), "--accept-flagged"])
    accepted_output = capsys.readouterr().out

    assert (refused, accepted) == (1, 0)
    assert "e1\tRECEIPT_INVALID\tflagged: " in refused_output
    assert "e1\tRECEIPT_INVALID\tflagged: " in accepted_output
    assert "FAILED (1 flagged)" in refused_output
    assert "ok (1 flagged, accepted)" in accepted_output


def test_given_the_latest_head_every_rechained_forgery_also_shows_as_not_the_latest() -> None:
    head = pinned(head=True)
    for case in EXPECTED:
        data = (EXAMPLES / "tampered" / case["file"]).read_bytes()
        codes = verify_record(data, **head).codes()
        assert set(case["codes"]) - {"DIRECTORY_NOT_PINNED", "APPROVER_NOT_AUTHORIZED"} <= codes, case["file"]
        if case["rewritesHistory"]:
            assert Check.ROLLBACK in codes, case["file"]


def test_the_cli_as_its_own_process_says_ok_with_exit_0_and_how_much_it_trusted_the_file() -> None:
    record = str(EXAMPLES / "run-record.json")
    run = [sys.executable, "-m", "hatp_journal.recorder.cli.command_line", "verify", record]

    trusting = subprocess.run(run, capture_output=True, text=True, check=False)
    careful = subprocess.run([*run, *cli_pins(head=True)], capture_output=True, text=True, check=False)
    rolled = subprocess.run(
        [*run[:-1], str(EXAMPLES / "tampered" / "rolled-back.json"), *cli_pins(head=True)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert (trusting.returncode, careful.returncode, rolled.returncode) == (0, 0, 1)
    assert "trust on first use" in trusting.stdout
    assert "trust on first use" not in careful.stdout
    assert printed_codes(rolled.stdout) == {"ROLLBACK"}
    assert "Traceback" not in trusting.stderr + careful.stderr + rolled.stderr


def test_a_key_file_that_cannot_be_read_makes_verify_exit_2(tmp_path: Path) -> None:
    status = main(
        ["verify", str(EXAMPLES / "run-record.json"), "--server-key", f"crm={tmp_path / 'none.json'}"]
    )

    assert status == 2


def test_the_docs_list_every_problem_code_and_every_published_forgery() -> None:
    doc = DOC.read_text("utf-8")
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", doc, re.M))

    assert listed == {code.value for code in Check}
    for case in EXPECTED:
        [row] = [line for line in doc.splitlines() if line.startswith(f"| `tampered/{case['file']}` |")]
        cells = row.split(" | ")
        assert set(re.findall(r"`([A-Z_]+)`", cells[2])) == set(case["codes"]), case["file"]
        assert set(re.findall(r"`([A-Z_]+)`", cells[3])) == set(case["flagged"]), case["file"]


def test_every_documented_code_is_raised_by_at_least_one_known_answer_file() -> None:
    doc = DOC.read_text("utf-8")
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", doc, re.M))
    raised = {
        code for case in EXPECTED for code in (*case["codes"], *case["codesFromFile"], *case["flagged"])
    }
    witnessed = json.loads((ROOT / "docs" / "examples" / "witnessed" / "expected.json").read_text("utf-8"))
    raised |= {code for case in witnessed for code in case["codes"]}  # §10's, by their own files

    assert listed - raised == set()
