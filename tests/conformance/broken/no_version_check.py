"""The CRM, except that compensate never compares the resource with ifVersion."""

import _crm

from hatp_journal.toolkit import _undo as undo


def ignore_if_version(journal: object) -> None:
    undo._matches = lambda record, if_version, state: True  # type: ignore[attr-defined]


VARIANT = _crm.Variant(ignore_if_version)

if __name__ == "__main__":
    VARIANT.serve()
