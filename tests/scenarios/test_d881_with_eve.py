"""D-881 with Eve's edit of the deal: a conflict kept by default, overwritten only by an explicit override."""

from __future__ import annotations

from pathlib import Path

import pytest
from d881_readback import assert_one_cancel_per_attendee, deal_stage, play_in_process, reversal_of

from hatp_journal.servers.mailsink import read_maildir

pytestmark = pytest.mark.slow


def test_with_eve_the_deal_step_is_a_conflict_naming_her_and_the_meeting_is_still_cancelled(
    tmp_path: Path,
) -> None:
    out = play_in_process(tmp_path, eve=True)

    assert "Changed since (kept unless overridden):" in out, out
    assert "stage is now Negotiation (v14), changed by eve@acme.com" in out, out
    assert deal_stage(tmp_path) == "Negotiation"
    assert_one_cancel_per_attendee(read_maildir(tmp_path / "mail"))
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "conflicted"}
    assert "verify says ok" in out


def test_with_eve_and_an_override_the_approver_overwrites_her_change(
    tmp_path: Path,
) -> None:
    out = play_in_process(tmp_path, eve=True, override=True)

    assert deal_stage(tmp_path) == "Proposal"
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "reversed"}
    assert "overwrote a newer change, by override of human://acme.com/lee" in out, out
    assert "verify says ok" in out
