"""`hatp-demo friday` (protocol.md §12), judged from the real mail sink and the Run Record."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from hatp_journal.scenarios import friday

pytestmark = pytest.mark.slow


def test_friday_mails_a_review_a_reminder_per_window_an_escalation_and_records_both_kinds_of_lapse(
    tmp_path: Path,
) -> None:
    printed = io.StringIO()
    told = anyio.run(friday.run, tmp_path / "friday", printed)

    assert [to for to, _ in told.mail] == ["dana@acme.com", "dana@acme.com", "lee@acme.com", "dana@acme.com"]
    assert told.mail[0][1].startswith("Review of sales-bot's run")
    assert told.mail[2][1].startswith("Nobody has looked")
    assert told.notices == [
        ("review", "", ""),
        ("reminder", "e1", ""),
        ("escalation", "e1", ""),
        ("lapse", "e1", "escalation"),
        ("reminder", "e2", ""),
        ("seen", "", ""),
        ("lapse", "e2", "quiet"),
    ]
    assert told.repeated_tick == ""  # the same tick twice sends nothing twice
    assert "mail sink: 4 messages" in printed.getvalue()
