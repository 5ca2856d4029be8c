"""What a server or an agent wrote can't forge what a person reads in a terminal.

The calendar takes line breaks, C1 controls and bidi overrides in an event's summary (RFC 5545 TEXT
refuses only C0 controls but for line breaks and tab). An agent books such an event through the
Recorder; `asks`, `approve`, `show`, `plan` and the undo's `approve` each print one line per step,
with every such character written as a visible escape.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from hatp_journal._shared.text import BIDI_CONTROLS, shown
from hatp_journal.recorder.testing import DANA, LEAD, POLICY, Org, make_org
from hatp_journal.recorder.web.server import serving
from hatp_journal.servers.calendar.server import build
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import SigningKey

FORGED = (
    'Lunch\n  step 9  Deal D-1 stage: Won → Lost\nCannot be undone:\n  step 8  nothing"'
    "\u009b2J\u009b31m red \u202egpj.exe"
)
"""A summary that, printed as it is, would add a fake step, a fake section, clear the screen (CSI
as the one C1 character U+009B), turn the text red, and flip the rest right to left."""

ATTENDEE = "buyer@globex.example"


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` that are not plain printable text (line breaks aside)."""
    return [
        c
        for c in text
        if c != "\n" and (unicodedata.category(c) in ("Cc", "Zl", "Zp", "Cs") or c in BIDI_CONTROLS)
    ]


def lines_naming(text: str, words: str) -> list[str]:
    return [line for line in text.splitlines() if words in line]


@pytest.fixture
def org(tmp_path: Path) -> Iterator[Org]:
    with ExitStack() as stack:
        sink = stack.enter_context(MailSink(tmp_path / "mail"))
        mcp, journal = build(tmp_path / "cal.db", SigningKey.generate(), "127.0.0.1", sink.port)
        stack.callback(journal.engine.dispose)
        url = stack.enter_context(serving(mcp.http_app(), scheduler=True))
        made = make_org(tmp_path, {"calendar": f"{url}/mcp"})
        with made.config.open("a") as config:  # its declarations count: the host trusts it
            config.write("trusted = true\n")
        policy = {**POLICY, "autonomy": {**POLICY["autonomy"], "compensate": "ask", "approver": LEAD}}
        (tmp_path / "policy.json").write_text(json.dumps(policy))
        yield made


def test_a_summary_with_line_breaks_ansi_and_bidi_is_one_escaped_line_in_asks_show_plan_and_approve(
    org: Org,
) -> None:
    booking = {
        "summary": FORGED,
        "start": "2030-11-04T15:00:00Z",
        "end": "2030-11-04T16:00:00Z",
        "attendees": [ATTENDEE],
    }
    printed: dict[str, tuple[int, str, str]] = {}

    def decide(number: int) -> None:
        if number == 1:  # the booking waits for Lee: he reads it in `asks` and approves it
            printed["asks"] = org.cli("asks")
            ref = printed["asks"][1].split()[0]
            printed["approve ask"] = org.approve(ref)

    told: list[object] = []
    run = org.agent([("calendar_create_event", booking)] * 2, told=told, between=decide)
    printed["show"] = org.cli("show", run)
    printed["plan"] = org.cli("plan", run, "--from", "1", "--by", DANA)
    plan_ref = lines_naming(printed["plan"][1], "waits for")[0].split()[1]
    printed["approve plan"] = org.approve(plan_ref)

    for command, (code, out, err) in printed.items():
        assert code == 0, (command, out, err)
        assert raw_controls(out) == [], command
        assert not [line for line in out.splitlines() if line.lstrip().startswith(("step 9", "step 8"))]
        assert "\nCannot be undone:" not in out, command
    as_text, as_argument = shown(FORGED), shown(json.dumps(FORGED, ensure_ascii=False))
    for command in ("asks", "show", "plan", "approve plan"):
        for line in lines_naming(printed[command][1], "Lunch"):  # the whole summary, escaped
            assert as_text in line or as_argument in line, (command, line)
    [asked] = lines_naming(printed["asks"][1], "Lunch")
    assert "calendar.create_event" in asked
    assert "R2 (compensable at a known cost)" in asked
    assert f"reaches {ATTENDEE}" in asked
    assert len(lines_naming(printed["show"][1], "Lunch")) == 2  # the ask, and the call it became
    plan = printed["plan"][1].splitlines()
    assert plan[0] == "Undo 1 action by sales-bot for Dana:"
    assert plan[1].startswith('  step 1  Cancel "Lunch\\n  step 9')
    assert plan[1].endswith(f"(attendees get a cancellation notice: {ATTENDEE})")  # whom the undo mails
    assert len(plan) == 4  # the step, a blank line, who decides
    [undone] = lines_naming(printed["approve plan"][1], "Lunch")
    assert undone.startswith("  reversed       step 1  Cancel ")
