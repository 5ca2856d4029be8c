"""The CRM plus three sloppy tools: one with no declaration, one whose MCP hints contradict its
declaration, and an irreversible one that suggests no remedy."""

from typing import Any

import _crm
from fastmcp import FastMCP
from mcp.types import ToolAnnotations

from hatp_journal.servers.crm import server as crm
from hatp_journal.servers.crm.testing import TESTING_HOOKS
from hatp_journal.toolkit import Effect, Tx, irreversible
from hatp_journal.toolkit.testing import Sample, sample_for
from hatp_journal.toolkit.wire import META_KEY


@irreversible(reason="delivered to external recipients")
def notify(text: str) -> Effect:
    """Tell the customer something (and suggest nothing if it was wrong)."""
    return Effect(result={"sent": text}, summary="Notified the customer", resource="crm://acme/notices")


@sample_for(notify)
def a_notice(tx: Tx) -> Sample:
    return Sample(arguments={"text": "hello"}, shows=["Notified"])


def add_sloppy_tools(mcp: FastMCP) -> None:
    @mcp.tool
    def ping() -> str:
        """Answer pong (declares nothing)."""
        return "pong"

    def peek(deal_id: str) -> dict[str, Any]:
        """Declared a read, but its hints say it may write."""
        return {"deal": deal_id}

    hints = ToolAnnotations(read_only_hint=False, destructive_hint=True)
    mcp.tool(peek, annotations=hints, meta={META_KEY: {"protocol": "hatp-journal/0.3", "read": True}})


VARIANT = _crm.Variant(
    tools=(crm.update_deal, crm.restore_stage, notify, a_notice, *TESTING_HOOKS[:2]),
    more=add_sloppy_tools,
)

if __name__ == "__main__":
    VARIANT.serve()
