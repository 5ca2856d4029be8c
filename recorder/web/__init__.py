"""The web approver: the Human Gateway's pages in a browser (SPEC §9, §11, §12)."""

from hatp_journal.recorder.web.app import WebApprover
from hatp_journal.recorder.web.errors import WebCode, WebRefusal

__all__ = ["WebApprover", "WebCode", "WebRefusal"]
