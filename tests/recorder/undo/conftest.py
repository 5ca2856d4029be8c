"""The ``org`` fixture: an organisation with a Recorder in front of the chain server."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.undo_org import Org, make_org


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Org:
    return make_org(tmp_path, capfd)
