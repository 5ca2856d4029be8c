"""The CRM, except that one part of each operation's results is wrong:

- update_deal's result names another server (re-signed: ``server_mismatch``);
- charge_order's result says its undo is ``unknown`` though it declares compensate (``kind_mismatch``);
- export_report's result says no reason why it can't be undone (re-signed: ``no_reason``).
"""

import _crm

from hatp_journal.toolkit.wire import JournalObject, UndoInfo


def another_server(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    return sign(journal.model_copy(update={"server": "crm://someone-else"}))


def unknown_kind(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    undo = journal.undo or UndoInfo(kind="compensate")
    return sign(journal.model_copy(update={"undo": undo.model_copy(update={"kind": "unknown"})}))


def no_reason(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    return sign(journal.model_copy(update={"reason": None}))


VARIANT = _crm.Variant(
    _crm.change_results(
        {"update_deal": another_server, "charge_order": unknown_kind, "export_report": no_reason}
    )
)

if __name__ == "__main__":
    VARIANT.serve()
