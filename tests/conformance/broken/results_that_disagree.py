"""The CRM, except that each operation's results disagree with something, re-signed so that the
receipt still verifies:

- update_deal's result names a side effect its declaration doesn't (``terms_mismatch``);
- charge_order's undoBy is a day later than the call time + its window (``undo_by_mismatch``);
- export_report, declared ``none``, hands out a compensation token (``token_on_none``).
"""

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import _crm

from hatp_journal.toolkit import Invocation, Journal, parse_wire_time, wire_time
from hatp_journal.toolkit.signing import call_payload
from hatp_journal.toolkit.wire import JournalObject, UndoInfo

Change = Callable[[JournalObject], JournalObject]


def more_side_effects(journal: JournalObject) -> JournalObject:
    undo = journal.undo or UndoInfo(kind="compensate")
    noisy = undo.model_copy(update={"side_effects": [*undo.side_effects, "the customer is emailed"]})
    return journal.model_copy(update={"undo": noisy})


def a_day_later(journal: JournalObject) -> JournalObject:
    undo = journal.undo or UndoInfo(kind="compensate")
    later = wire_time(parse_wire_time(undo.undo_by or "") + timedelta(days=1))
    return journal.model_copy(update={"undo": undo.model_copy(update={"undo_by": later})})


def a_token(journal: JournalObject) -> JournalObject:
    return journal.model_copy(update={"compensation_token": "ctk_" + "x" * 43})


CHANGES: dict[str, Change] = {
    "update_deal": more_side_effects,
    "charge_order": a_day_later,
    "export_report": a_token,
}


def disagree(journal: Journal) -> None:
    invoke = journal.invoke

    def changed(tool: str, arguments: Mapping[str, Any] | None) -> Invocation:
        done = invoke(tool, arguments)
        if tool not in CHANGES or done.journal.receipt is None:
            return done
        body = CHANGES[tool](done.journal).model_copy(update={"receipt": None})
        payload = call_payload(body.wire(), tool, dict(arguments or {}))
        receipt = journal.key.sign(payload, done.journal.receipt.issued_at)
        return Invocation(done.result, body.model_copy(update={"receipt": receipt}))

    journal.invoke = changed  # type: ignore[method-assign]


_crm.serve(disagree)
