"""The D-881 story end to end, judged from what the mail sink and the servers' stores hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session

from hatp_journal.scenarios.cli import main
from hatp_journal.servers.calendar.itip import parse_event
from hatp_journal.servers.calendar.store import all_events
from hatp_journal.servers.crm.store import read_deal
from hatp_journal.servers.mailsink import read_maildir
from hatp_journal.toolkit import create_store_engine


def test_d881_invites_cancels_and_puts_the_deal_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["d881", "--workdir", str(tmp_path)])

    assert status == 0, capsys.readouterr().err
    delivered = read_maildir(tmp_path / "mail")
    by_method: dict[str | None, list[tuple[str, ...]]] = {}
    for message in delivered:
        by_method.setdefault(message.calendar_method, []).append(message.envelope_to)
    attendees = [("buyer@globex.com",), ("dana@acme.com",)]
    assert sorted(by_method["REQUEST"]) == attendees
    assert sorted(by_method["CANCEL"]) == attendees
    assert by_method[None] == [("buyer@globex.com",)]
    assert len(delivered) == 5
    [welcome] = [m for m in delivered if m.calendar_method is None]
    assert welcome.subject == "Welcome to Acme"

    requests = [parse_event(m.calendar_parts()[0]) for m in delivered if m.calendar_method == "REQUEST"]
    cancels = [parse_event(m.calendar_parts()[0]) for m in delivered if m.calendar_method == "CANCEL"]
    uids = {event.uid for event in requests + cancels}
    assert len(uids) == 1
    assert min(c.sequence for c in cancels) > max(r.sequence for r in requests)

    crm = create_store_engine(tmp_path / "crm.db")
    calendar = create_store_engine(tmp_path / "calendar.db")
    try:
        assert read_deal(crm, "D-881").stage == "Proposal"
        with Session(calendar) as session:
            [event] = all_events(session)
            assert (event.uid, event.status) == (uids.pop(), "CANCELLED")
    finally:
        crm.dispose()
        calendar.dispose()
