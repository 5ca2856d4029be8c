"""The CRM, except that the process dies (exit status 3) when update_deal is called."""

import os
from collections.abc import Mapping
from typing import Any

import _crm

from hatp_journal.toolkit import Journal
from hatp_journal.toolkit.testing import Invocation


def die_on_update_deal(journal: Journal) -> None:
    invoke = journal.invoke

    def dying(tool: str, arguments: Mapping[str, Any] | None, **bound: Any) -> Invocation:
        if tool == "update_deal":
            os._exit(3)
        return invoke(tool, arguments, **bound)

    journal.invoke = dying  # type: ignore[method-assign]


VARIANT = _crm.Variant(die_on_update_deal)

if __name__ == "__main__":
    VARIANT.serve()
