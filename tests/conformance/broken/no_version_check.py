"""The CRM, except that compensate never compares the resource with ifVersion."""

import _crm

from hatp_journal.toolkit import _undo as undo
from hatp_journal.toolkit import _undo_answers as answers


def ignore_if_version(journal: object) -> None:
    # The engine checks one resource, the answers module each of several: both are told yes.
    undo.still_matches = answers.still_matches = lambda record, if_version, state: True


VARIANT = _crm.Variant(ignore_if_version)

if __name__ == "__main__":
    VARIANT.serve()
