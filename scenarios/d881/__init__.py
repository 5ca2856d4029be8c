"""The D-881 story (SPEC §0) end to end: ``hatp-demo d881 [--eve [--override]]``."""

from hatp_journal.scenarios.d881.story import Told, run
from hatp_journal.scenarios.d881.world import ScenarioError

__all__ = ["ScenarioError", "Told", "run"]
