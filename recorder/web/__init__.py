"""The web approver: the Human Gateway's pages in a browser (protocol.md §9, §11, §12)."""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.recorder.web.app import WebApprover
    from hatp_journal.recorder.web.errors import WebCode, WebRefusal
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.recorder.web.app": ["WebApprover"],
            "hatp_journal.recorder.web.errors": ["WebCode", "WebRefusal"],
        },
    )

__all__ = ["WebApprover", "WebCode", "WebRefusal"]
