"""The CRM, except that an undo window never closes."""

import _crm

from hatp_journal.toolkit import _undo as undo


def never_expire(journal: object) -> None:
    undo.is_expired = lambda record, now: False


VARIANT = _crm.Variant(never_expire)

if __name__ == "__main__":
    VARIANT.serve()
