"""What the pages compute, without a server: countdowns and the reasons an ask shows."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from support.undo_org import LEAD, LEE, make_org

from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.runs.asks import Ask
from hatp_journal.recorder.web.views import ask_view, clock_time, time_left

NOW = datetime(2026, 11, 7, 18, 0, tzinfo=UTC)


def test_countdowns_read_in_days_hours_and_minutes_and_closed_windows_say_closed() -> None:
    assert time_left("2026-11-09T21:30:00Z", NOW) == "2d 3h left"
    assert time_left("2026-11-07T19:15:00Z", NOW) == "1h 15m left"
    assert time_left("2026-11-07T18:00:20Z", NOW) == "1m left"
    assert time_left("2026-11-07T18:00:00Z", NOW) == "closed"
    assert time_left(None, NOW) == "no window"
    assert clock_time("2026-11-07T18:15:00Z") == "18:15 UTC"


def test_an_ask_over_a_money_cap_shows_the_reason_code_the_totals_and_who_may_decide(tmp_path, capfd) -> None:
    org = make_org(tmp_path, capfd)
    directory = Directory.load(org.root / "directory.json")
    body = {
        "server": "crm",
        "tool": "charge_order",
        "arguments": {
            "order_id": "O-1001",
            "amount": "600.00",
            "currency": "USD",
            "receipt_to": "ap@globex.com",
            "memo": "Zoë\u202eexe.gpj\u2028\x1b[2J",
        },
        "declared": "compensate",
        "callDigest": "sha256:00",  # as every ask is recorded (asks.py): what an approval signs
        "approver": LEAD,
        "decideBy": "2026-11-07T22:00:00Z",
        "decision": {
            "action": "ask",
            "reversibility": {"class": "R2", "rule": "declaration-compensate", "rationale": "…"},
            "reasons": [{"code": "MONEY_PER_RUN", "detail": "the run would move 600.00 USD of 500 USD"}],
            "totals": {"perRun": {"spent": "0.00", "call": "600.00", "total": "600.00", "cap": "500"}},
        },
    }
    entry = Entry(
        id="e1", run="r", seq=1, time="2026-11-07T18:00:00Z", kind="ask", body=body, prev_hash="", hash=""
    )

    view = ask_view(Ask("r", entry, "pending"), directory, NOW)

    assert view.reasons == ["MONEY_PER_RUN: the run would move 600.00 USD of 500 USD"]
    assert view.rclass == "R2 (compensable at a known cost)"
    assert view.reaches == ["ap@globex.com"]
    assert view.totals == ["perRun: spent 0.00, call 600.00, total 600.00, cap 500"]
    assert view.holders == [f"Lee ({LEE})"]
    assert view.left == "4h 0m left"
    assert '"memo": "Zoë\\u202eexe.gpj\\u2028\\u001b[2J"' in view.arguments  # escaped, not flipped
    assert json.loads(view.arguments) == body["arguments"]
