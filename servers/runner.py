"""What every demo server's command line shares: store, key, transport."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the servers' --help must not wait for the MCP stack
    from fastmcp import FastMCP

from hatp_journal.toolkit.errors import KeyFileError


def add_server_arguments(parser: argparse.ArgumentParser, *, default_db: str) -> None:
    """Add ``--db``, ``--key``, ``--transport``, ``--host`` and ``--port``."""
    parser.add_argument(
        "--db", default=default_db, help="the store: a SQLite file, or a database URL (postgresql://…)"
    )
    parser.add_argument(
        "--key",
        type=Path,
        default=None,
        help="Ed25519 signing key file (created on first use); default: next to a --db file",
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only; loopback by default")
    parser.add_argument("--port", type=int, default=0, help="HTTP only; 0 picks a free port")


def key_path(args: argparse.Namespace) -> Path:
    """The signing key file: ``--key`` or ``<db>.key`` (a store URL has no folder: it needs ``--key``)."""
    chosen: Path | None = args.key
    if chosen is None and "://" in str(args.db):
        raise KeyFileError("the store is a database URL: say where the signing key is with --key")
    return chosen if chosen is not None else Path(f"{args.db}.key")


def run_server(mcp: FastMCP, args: argparse.Namespace) -> None:
    """Serve ``mcp`` over stdio or streamable HTTP as the arguments say."""
    if args.transport == "stdio":
        mcp.run(show_banner=False)
    else:
        mcp.run(transport="http", host=args.host, port=args.port, show_banner=False)


def add_courier_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--courier`` for a server that mails through an outbox (see servers/outbox.py)."""
    parser.add_argument(
        "--courier",
        choices=("process", "inline"),
        default="process",
        help="who delivers the outbox: a courier process of its own (survives a kill of the server), "
        "or this server right after each commit",
    )
