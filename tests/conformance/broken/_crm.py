"""Serve the demo CRM over stdio with one defect put in, for the conformance suite to catch.

Each broken variant is a small script beside this one: ``python no_expiry.py --db crm.db``.
The defects reach into the toolkit's internals on purpose: a real server would have to be
written wrong to behave like this; here one seam is broken and everything else stays correct.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from fastmcp import FastMCP

from hatp_journal.servers.crm import build
from hatp_journal.toolkit import Invocation, Journal, SigningKey, create_store_engine, utc_now
from hatp_journal.toolkit.signing import call_payload
from hatp_journal.toolkit.wire import JournalObject


def serve(
    defect: Callable[[Journal], None] | None = None,
    tools: tuple[Callable[..., Any], ...] | None = None,
    more: Callable[[FastMCP], None] | None = None,
) -> None:
    """Build the CRM (or a Journal over ``tools`` in its place), apply ``defect``, add ``more``
    tools by hand, and serve stdio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    db = parser.parse_known_args()[0].db  # a variant may read more arguments of its own
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


Sign = Callable[..., JournalObject]
"""``sign(body, key=None, arguments=None)``: ``body`` with a receipt by ``key`` (the server's own if
None) over ``arguments`` (those of the call if None)."""
Change = Callable[[JournalObject, Sign], JournalObject]
"""Takes a result's journal object without its receipt, and ``sign``; returns what the agent gets."""


def change_results(changes: dict[str, Change]) -> Callable[[Journal], None]:
    """A defect: the results of the tools named in ``changes`` are changed before they leave."""

    def defect(journal: Journal) -> None:
        invoke = journal.invoke

        def changed(tool: str, arguments: Mapping[str, Any] | None, **bound: Any) -> Invocation:
            done = invoke(tool, arguments, **bound)
            receipt = done.journal.receipt
            if tool not in changes or receipt is None:
                return done

            def sign(
                body: JournalObject, key: SigningKey | None = None, signed: Mapping[str, Any] | None = None
            ) -> JournalObject:
                over = dict(arguments or {}) if signed is None else dict(signed)
                payload = call_payload(body.wire(), tool, over)
                by = (key or journal.key).sign(payload, receipt.issued_at)
                return body.model_copy(update={"receipt": by})

            body = done.journal.model_copy(update={"receipt": None})
            return Invocation(done.result, changes[tool](body, sign))

        journal.invoke = changed  # type: ignore[method-assign]

    return defect
