"""Serve the demo CRM over stdio with one defect put in, for the conformance suite to catch.

Each broken variant is a small script beside this one: ``python no_expiry.py --db crm.db``. It
defines ``VARIANT``, so the conformance tests can also build it in their own process and speak MCP
to it over the in-memory transport (conformance_helpers.run_broken).
The defects reach into the toolkit's internals on purpose: a real server would have to be
written wrong to behave like this; here one seam is broken and everything else stays correct.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastmcp import FastMCP

from hatp_journal.servers.crm import build
from hatp_journal.toolkit import Journal, SigningKey, create_store_engine
from hatp_journal.toolkit import _server as toolkit_server
from hatp_journal.toolkit import _undo as toolkit_undo
from hatp_journal.toolkit import _undo_answers as toolkit_answers
from hatp_journal.toolkit.signing import call_payload
from hatp_journal.toolkit.testing import Invocation
from hatp_journal.toolkit.wire import JournalObject, utc_now

ARGUMENTS: list[str] = []
"""The command line of the variant being built: ``sys.argv[1:]`` as a script, or what the in-process
runner gave (tests/conformance/conformance_helpers.py)."""

PATCHED_MODULES = (toolkit_undo, toolkit_answers, toolkit_server)
"""Modules whose functions some defects replace; an in-process run puts them back afterwards."""


def arguments() -> list[str]:
    """The variant's own arguments (a defect reads its ``--lie``, ``--part`` or ``--flaw`` here)."""
    return ARGUMENTS or sys.argv[1:]


@dataclass(frozen=True)
class Variant:
    """The CRM (or a Journal over ``tools`` in its place) with ``defect`` applied and ``more`` tools
    added by hand."""

    defect: Callable[[Journal], None] | None = None
    tools: tuple[Callable[..., Any], ...] | None = None
    more: Callable[[FastMCP], None] | None = None

    def build(self, argv: list[str]) -> tuple[FastMCP, Journal]:
        """The broken server and its journal for the command line ``argv`` (``--db PATH`` and the
        variant's own)."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--db", required=True)
        db = parser.parse_known_args(argv)[0].db  # a variant may read more arguments of its own
        ARGUMENTS[:] = argv
        try:
            return self._build(db)
        finally:
            ARGUMENTS.clear()

    def _build(self, db: str) -> tuple[FastMCP, Journal]:
        key = SigningKey.generate()
        if self.tools is None:
            mcp, journal = build(db, key)
        else:
            from hatp_journal.servers.crm.store import SERVER, seed

            mcp = FastMCP("hatp-crm-broken")
            journal = Journal(SERVER, key=key, store=create_store_engine(db), clock=utc_now)
            journal.register(mcp, *self.tools)
            seed(journal.engine, journal.now())
        if self.defect is not None:
            self.defect(journal)
        if self.more is not None:
            self.more(mcp)
        return mcp, journal

    def serve(self) -> None:
        """Build from this script's command line and serve stdio."""
        self.build(sys.argv[1:])[0].run(show_banner=False)


@contextmanager
def toolkit_put_back() -> Iterator[None]:
    """Whatever a defect replaced in the toolkit's modules is put back when the block ends."""
    saved = [(module, dict(vars(module))) for module in PATCHED_MODULES]
    try:
        yield
    finally:
        for module, names in saved:
            vars(module).update(names)


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
