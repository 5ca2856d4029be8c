"""The demo CRM (``hatp-crm``): deals and orders behind a journal-aware MCP server.

``build(db, key)`` gives the FastMCP server and its :class:`~hatp_journal.toolkit.Journal`;
``edit_deal`` is a colleague's edit outside any agent run. See README.md.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from .server import REFUND_FEE, TOOLS, build
    from .store import SERVER, STAGES, Deal, Order, deal_uri, deal_view, edit_deal, order_uri, read_deal, seed
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.servers.crm.server": ["REFUND_FEE", "TOOLS", "build"],
            "hatp_journal.servers.crm.store": [
                "SERVER",
                "STAGES",
                "Deal",
                "Order",
                "deal_uri",
                "deal_view",
                "edit_deal",
                "order_uri",
                "read_deal",
                "seed",
            ],
        },
    )

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
