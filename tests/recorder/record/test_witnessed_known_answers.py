"""The known-answer files of witnessed heads (docs/examples/witnessed/, docs/run-record.md §10): each
is reported with exactly the codes ``expected.json`` names, by ``verify_record`` and by
``hatp-recorder verify`` asking the witness's answer kept as a file; this page and the files agree."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.record import verify_record
from hatp_journal.recorder.record.witness_checks import WitnessPins
from hatp_journal.recorder.witness.forge import RUN, make
from hatp_journal.recorder.witness.wire import WitnessedHead
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import PublicKey

ROOT = Path(__file__).parents[3]
EXAMPLES = ROOT / "docs" / "examples" / "witnessed"
DOC = ROOT / "docs" / "run-record.md"
EXPECTED: list[dict[str, Any]] = json.loads((EXAMPLES / "expected.json").read_text("utf-8"))
ANSWER = EXAMPLES / "alpha" / "v1" / "runs" / RUN / "head"


def key(name: str) -> VerifyKey:
    return VerifyKey.from_wire(PublicKey.model_validate_json((EXAMPLES / f"{name}.pub.json").read_bytes()))


def pins(asked: str) -> WitnessPins:
    answers = {"yes": {"alpha": WitnessedHead.model_validate_json(ANSWER.read_bytes()).cosignature}}
    return WitnessPins(
        keys={"alpha": key("alpha")}, answers={"no": {}, "none": {"alpha": None}, **answers}[asked]
    )


@pytest.mark.parametrize("case", EXPECTED, ids=lambda case: f"{case['file']}-asked-{case['asked']}")
def test_each_witnessed_file_is_reported_with_exactly_its_codes(case: dict[str, Any]) -> None:
    recorder = key("recorder")
    report = verify_record(
        EXAMPLES / case["file"], recorder_keys={recorder.kid: recorder}, witnesses=pins(case["asked"])
    )

    assert report.codes() == set(case["codes"])


@pytest.mark.parametrize("case", [c for c in EXPECTED if c["asked"] != "none"], ids=lambda c: c["file"])
def test_the_cli_asking_the_witness_answer_kept_as_a_file_reports_the_same(case: dict[str, Any]) -> None:
    args = ["verify", str(EXAMPLES / case["file"]), "--recorder-key", str(EXAMPLES / "recorder.pub.json")]
    args += ["--witness", f"alpha={EXAMPLES / 'alpha.pub.json'}"]
    if case["asked"] == "yes":
        args += ["--ask-witness", f"alpha={(EXAMPLES / 'alpha').as_uri()}"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(args)

    codes = {line.split("\t")[1] for line in printed.getvalue().splitlines() if line.count("\t") >= 2}
    assert (status, codes) == (1 if case["codes"] else 0, set(case["codes"]))


def test_a_witness_that_cannot_be_asked_makes_verify_exit_2(tmp_path: Path) -> None:
    args = ["verify", str(EXAMPLES / "run-record.json"), "--witness", f"alpha={EXAMPLES / 'alpha.pub.json'}"]

    assert main([*args, "--ask-witness", f"alpha={tmp_path.as_uri()}"]) == 2
    assert main([*args, "--ask-witness", f"beta={tmp_path.as_uri()}"]) == 2  # beta's key not pinned


def test_the_page_lists_each_witnessed_file_with_its_codes() -> None:
    rows = [line for line in DOC.read_text("utf-8").splitlines() if line.startswith("| `witnessed/")]
    listed = []
    for row in rows:
        cells = row.strip("|").split(" | ")
        asked = {"yes": "yes", "no": "no", "none": "none"}[cells[2].strip()]
        listed.append((cells[0].strip("` "), asked, sorted(re.findall(r"`([A-Z_]+)`", cells[3]))))

    assert sorted(listed) == sorted(
        (f"witnessed/{c['file']}", c["asked"], sorted(c["codes"])) for c in EXPECTED
    )


def test_the_files_are_what_the_forge_makes_today(tmp_path: Path) -> None:
    make(tmp_path)

    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made
    for name in made:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes(), name
