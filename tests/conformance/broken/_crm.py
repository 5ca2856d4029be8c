"""Serve the demo CRM over stdio with one defect put in, for the conformance suite to catch.

Each broken variant is a small script beside this one: ``python no_expiry.py --db crm.db``.
The defects reach into the toolkit's internals on purpose: a real server would have to be
written wrong to behave like this; here one seam is broken and everything else stays correct.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from fastmcp import FastMCP

from hatp_journal.servers.crm import build
from hatp_journal.toolkit import Journal, SigningKey, create_store_engine, utc_now


def serve(
    defect: Callable[[Journal], None] | None = None,
    tools: tuple[Callable[..., Any], ...] | None = None,
    more: Callable[[FastMCP], None] | None = None,
) -> None:
    """Build the CRM (or a Journal over ``tools`` in its place), apply ``defect``, add ``more``
    tools by hand, and serve stdio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    db = parser.parse_args().db
    key = SigningKey.generate()
    if tools is None:
        mcp, journal = build(db, key)
    else:
        from hatp_journal.servers.crm.store import SERVER, seed

        mcp = FastMCP("hatp-crm-broken")
        journal = Journal(SERVER, key=key, store=create_store_engine(db), clock=utc_now)
        journal.register(mcp, *tools)
        seed(journal.engine, journal.now())
    if defect is not None:
        defect(journal)
    if more is not None:
        more(mcp)
    mcp.run(show_banner=False)
