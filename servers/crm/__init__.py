"""The demo CRM (``hatp-crm``): deals and orders behind a journal-aware MCP server.

``build(db, key)`` gives the FastMCP server and its :class:`~hatp_journal.toolkit.Journal`;
``edit_deal`` is a colleague's edit outside any agent run. See README.md.
"""

from .server import REFUND_FEE, TOOLS, build
from .store import SERVER, STAGES, Deal, Order, deal_uri, deal_view, edit_deal, order_uri, read_deal, seed

__all__ = [
    "REFUND_FEE",
    "SERVER",
    "STAGES",
    "TOOLS",
    "Deal",
    "Order",
    "build",
    "deal_uri",
    "deal_view",
    "edit_deal",
    "order_uri",
    "read_deal",
    "seed",
]
