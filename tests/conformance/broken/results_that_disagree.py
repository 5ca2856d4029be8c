"""The CRM, except that each operation's results disagree with something, re-signed so that the
receipt still verifies:

- update_deal's result names a side effect its declaration doesn't (``terms_mismatch``);
- charge_order's undoBy is a day later than the call time + its window (``undo_by_mismatch``);
- export_report, declared ``none``, hands out a compensation token (``token_on_none``).
"""

from datetime import timedelta

import _crm

from hatp_journal.toolkit.wire import JournalObject, UndoInfo, parse_wire_time, wire_time


def more_side_effects(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    undo = journal.undo or UndoInfo(kind="compensate")
    noisy = undo.model_copy(update={"side_effects": [*undo.side_effects, "the customer is emailed"]})
    return sign(journal.model_copy(update={"undo": noisy}))


def a_day_later(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    undo = journal.undo or UndoInfo(kind="compensate")
    later = wire_time(parse_wire_time(undo.undo_by or "") + timedelta(days=1))
    return sign(journal.model_copy(update={"undo": undo.model_copy(update={"undo_by": later})}))


def a_token(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    return sign(journal.model_copy(update={"compensation_token": "ctk_" + "x" * 43}))


VARIANT = _crm.Variant(
    _crm.change_results(
        {"update_deal": more_side_effects, "charge_order": a_day_later, "export_report": a_token}
    )
)

if __name__ == "__main__":
    VARIANT.serve()
