"""The Friday-evening story (protocol.md §12): ``hatp-demo friday``."""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.scenarios.friday.story import run
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.scenarios.friday.story": ["run"],
        },
    )

__all__ = ["run"]
