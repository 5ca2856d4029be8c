"""An organisation with a Recorder in front of the chain server, and the people who undo.

The shipped harness (``hatp_journal.recorder.testing``: ``Org``, ``make_org``, ``mailing``) does the
work; this module keeps the names the tests import and starts the test servers: the chain server and,
with ``plain=True``, the plain (journal-unaware) one, over stdio.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hatp_journal.recorder import testing
from hatp_journal.recorder.testing import DANA, EVE, LEAD, LEE, POLICY, Org, mailing

HERE = Path(__file__).parent
CHAIN = HERE / "chain_server.py"
PLAIN = HERE.parent / "recorder" / "plain_server.py"

__all__ = ["CHAIN", "DANA", "EVE", "LEAD", "LEE", "PLAIN", "POLICY", "Org", "mailing", "make_org"]


def make_org(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], *, plain: bool = False, store: str = "recorder.db"
) -> Org:
    """The organisation in ``tmp_path`` with the chain server (``chain.db``, ``chain.key``)."""
    servers = {
        "chain": [
            sys.executable,
            str(CHAIN),
            "--db",
            str(tmp_path / "chain.db"),
            "--key",
            str(tmp_path / "chain.key"),
        ]
    }
    if plain:
        servers["plain"] = [sys.executable, str(PLAIN)]
    return testing.make_org(tmp_path, servers, capture=capfd, store=store)
