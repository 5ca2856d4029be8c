"""The D-881 story (protocol.md §0) end to end: ``hatp-demo d881 [--eve [--override]]``."""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.scenarios.d881.story import Told, run
    from hatp_journal.scenarios.d881.world import ScenarioError
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.scenarios.d881.story": ["Told", "run"],
            "hatp_journal.scenarios.d881.world": ["ScenarioError"],
        },
    )

__all__ = ["ScenarioError", "Told", "run"]
