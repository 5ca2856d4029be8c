"""Whether this process runs in testing mode (``HATP_JOURNAL_TESTING=1``): read by the toolkit's
test-only surface and by the crash points of servers and Recorders."""

from __future__ import annotations

import os
from collections.abc import Mapping

TESTING_ENV = "HATP_JOURNAL_TESTING"
"""Set to ``1`` to publish the test-only surface."""


def surface_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for the test-only surface."""
    return environ.get(TESTING_ENV, "") == "1"
