"""The CRM, except that each operation's receipts are wrong:

- update_deal's receipt is signed by a key the server never published (``unknown_kid``);
- charge_order's receipt signs other arguments than those sent (``receipt_invalid``);
- export_report's result carries no receipt (``no_receipt``).
"""

import _crm

from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.wire import JournalObject

STRANGER = SigningKey.generate()


def by_a_stranger(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    return sign(journal, STRANGER)


def over_other_arguments(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    return sign(journal, None, {"order_id": "someone else's"})


def unsigned(journal: JournalObject, sign: _crm.Sign) -> JournalObject:
    return journal


VARIANT = _crm.Variant(
    _crm.change_results(
        {"update_deal": by_a_stranger, "charge_order": over_other_arguments, "export_report": unsigned}
    )
)

if __name__ == "__main__":
    VARIANT.serve()
