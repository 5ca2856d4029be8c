"""An organisation with a Recorder in front of the chain server, and the people who undo.

The shipped harness (``hatp_journal.recorder.testing``: ``Org``, ``make_org``, ``mailing``) does the
work; this module keeps the names the tests import and starts the test servers. The chain server runs
in the test's own process, over streamable HTTP on 127.0.0.1, so the agent, ``plan`` and ``approve``
reach one server instead of each starting one (an MCP session over a real transport all the same).
Tests whose chain server must die (keys ``gone…``, ``lost…``, ``hang…``) ask for ``stdio=True``:
then the Recorder starts it as a process of its own for every command, as ``serve`` would. With
``plain=True`` the plain (journal-unaware) server is added, over stdio.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from hatp_journal.recorder import testing
from hatp_journal.recorder.testing import DANA, EVE, LEAD, LEE, POLICY, Org, mailing
from hatp_journal.recorder.web.server import serving
from hatp_journal.toolkit import SigningKey
from support import chain_server

HERE = Path(__file__).parent
CHAIN = HERE / "chain_server.py"
PLAIN = HERE.parent / "recorder" / "plain_server.py"

__all__ = [
    "CHAIN",
    "DANA",
    "EVE",
    "LEAD",
    "LEE",
    "PLAIN",
    "POLICY",
    "Org",
    "mailing",
    "make_org",
    "stop_servers",
]

_SERVING = ExitStack()
"""Chain servers started in this process for the running test (stopped by :func:`stop_servers`)."""


def stop_servers() -> None:
    """Stop the chain servers this process started (tests/conftest.py calls it after each test)."""
    _SERVING.close()


def serve_chain(db: Path, key: Path) -> str:
    """The chain server on ``db`` with the key in ``key``, served from this process; its MCP URL."""
    mcp, journal = chain_server.build(db, SigningKey.load_or_create(key))
    _SERVING.callback(journal.engine.dispose)
    url = _SERVING.enter_context(serving(mcp.http_app(), scheduler=True))  # sessions run in the lifespan
    return f"{url}/mcp"


def make_org(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    *,
    plain: bool = False,
    store: str = "recorder.db",
    stdio: bool = False,
) -> Org:
    """The organisation in ``tmp_path`` with the chain server (``chain.db``, ``chain.key``)."""
    db, key = tmp_path / "chain.db", tmp_path / "chain.key"
    servers: dict[str, list[str] | str] = {
        "chain": [sys.executable, str(CHAIN), "--db", str(db), "--key", str(key)]
        if stdio
        else serve_chain(db, key)
    }
    if plain:
        servers["plain"] = [sys.executable, str(PLAIN)]
    return testing.make_org(tmp_path, servers, capture=capfd, store=store)
