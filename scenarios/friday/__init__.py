"""The Friday-evening story (SPEC §12): ``hatp-demo friday``."""

from hatp_journal.scenarios.friday.story import run

__all__ = ["run"]
