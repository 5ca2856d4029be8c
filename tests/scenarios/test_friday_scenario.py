"""`hatp-demo friday` (protocol.md §12), judged from the real mail sink and the Run Record."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from hatp_journal.scenarios import friday
from hatp_journal.scenarios.friday.story import when_played

pytestmark = pytest.mark.slow


def test_friday_mails_a_review_a_reminder_per_window_an_escalation_and_records_both_kinds_of_lapse(
    tmp_path: Path,
) -> None:
    printed = io.StringIO()
    # The mail sink and the people's commands run in this process: the story is not about a kill.
    told = anyio.run(lambda: friday.run(tmp_path / "friday", printed, in_process=True))

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
    charge = told.mail[1][1].split(": ", 1)[1]  # the reminder's subject names the charge…
    assert charge in told.mail[2][1]  # …and so does the escalation's
    tick_lines = [line for line in printed.getvalue().splitlines() if line.startswith("    run_")]
    assert tick_lines
    assert all("\t" not in line and " to -" not in line for line in tick_lines)


def test_the_story_says_on_which_day_it_is_played_not_always_friday() -> None:
    thursday_morning = datetime(2026, 12, 3, 11, 15, tzinfo=UTC)
    friday_evening = datetime(2026, 12, 4, 19, 0, tzinfo=UTC)

    assert when_played(thursday_morning) == "Thursday morning (UTC), as if Friday evening"
    assert when_played(friday_evening) == "Friday evening (UTC)"
