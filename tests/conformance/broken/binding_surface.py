"""The CRM, except that its binding surface is wrong in the one way ``--flaw NAME`` picks
(``python binding_surface.py --db crm.db --flaw keys_unlisted``): ``hatp_journal_keys`` left out of
tools/list (it still answers) or listed without ``"binding": true``, or its answer publishes a key
whose kid does not name it, or no key at all."""

import argparse
from collections.abc import Sequence
from typing import Any

import _crm
from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import Tool
from mcp import types as mt

from hatp_journal.toolkit import Journal, SigningKey
from hatp_journal.toolkit.wire import KEYS_TOOL, META_KEY, KeysAnswer

FLAWS = ("keys_unlisted", "keys_unmarked", "kid_names_another_key", "no_keys")


class ListedWrong(Middleware):
    def __init__(self, flaw: str) -> None:
        self.flaw = flaw

    async def on_list_tools(
        self, context: MiddlewareContext[mt.ListToolsRequest], call_next: Any
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        if self.flaw == "keys_unlisted":
            return [tool for tool in tools if tool.name != KEYS_TOOL]
        if self.flaw == "keys_unmarked":
            return [
                tool.model_copy(update={"meta": {META_KEY: {}}}) if tool.name == KEYS_TOOL else tool
                for tool in tools
            ]
        return tools


def flaw() -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flaw", required=True, choices=FLAWS)
    return str(parser.parse_known_args(_crm.arguments())[0].flaw)


def publish_wrong_keys(journal: Journal) -> None:
    chosen = flaw()
    if chosen == "kid_names_another_key":
        wrong = journal.key.public.wire().model_copy(update={"kid": SigningKey.generate().kid})
        journal.keys = lambda: KeysAnswer(server=journal.server, keys=[wrong])  # type: ignore[method-assign]
    if chosen == "no_keys":
        journal.keys = lambda: KeysAnswer(server=journal.server, keys=[])  # type: ignore[method-assign]


def list_wrong(mcp: FastMCP) -> None:
    mcp.add_middleware(ListedWrong(flaw()))


VARIANT = _crm.Variant(publish_wrong_keys, more=list_wrong)

if __name__ == "__main__":
    VARIANT.serve()
