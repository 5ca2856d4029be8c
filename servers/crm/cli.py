"""``hatp-crm``: serve the CRM, or edit and show a deal as a colleague would.

    hatp-crm serve [--db crm.db] [--key KEY] [--transport stdio|http] [--host H] [--port N]
    hatp-crm edit  --db crm.db DEAL_ID --stage STAGE --by eve@acme.com
    hatp-crm show  --db crm.db DEAL_ID

Bad input (unknown deal or stage, missing store, an unusable key file) prints a message on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hatp_journal._shared.text import json_for_people
from hatp_journal.servers.runner import add_server_arguments, key_path, run_server
from hatp_journal.toolkit.errors import KeyFileError, StoreError, ToolFailed

from .constants import STAGES

USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    args = _parser().parse_args(argv)
    # Imported once the command is known: --help should not wait for SQLAlchemy, nor edit and show
    # for the MCP stack.
    from hatp_journal.toolkit import SigningKey, create_store_engine

    from .store import deal_view, edit_deal, read_deal

    if args.command == "serve":
        from .server import build

        try:
            key = SigningKey.load_or_create(key_path(args))
        except KeyFileError as error:
            return _bad_input(str(error))
        try:
            mcp, _ = build(args.db, key)
        except StoreError as error:
            return _bad_input(f"{error.code}: {error.message}")
        run_server(mcp, args)
        return 0
    if "://" not in args.db and not Path(args.db).is_file():
        return _bad_input(f"no CRM store at {args.db}; start `hatp-crm serve --db {args.db}` once first")
    try:
        engine = create_store_engine(args.db)
    except StoreError as error:
        return _bad_input(f"{error.code}: {error.message}")
    try:
        if args.command == "edit":
            deal = edit_deal(engine, args.deal_id, stage=args.stage, by=args.by)
        else:
            deal = read_deal(engine, args.deal_id)
    except ToolFailed as error:
        return _bad_input(error.message)
    finally:
        engine.dispose()
    print(json_for_people(deal_view(deal), indent=2))
    return 0


def _bad_input(message: str) -> int:
    print(f"hatp-crm: {message}", file=sys.stderr)
    return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hatp-crm", description="Acme's journal-aware demo CRM.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server")
    add_server_arguments(serve, default_db="crm.db")
    edit = commands.add_parser("edit", help="change a deal's stage as a colleague, outside any agent run")
    edit.add_argument("--db", required=True, help="the store: a SQLite file or a database URL")
    edit.add_argument("deal_id", help="e.g. D-881")
    edit.add_argument("--stage", required=True, help=f"one of: {', '.join(STAGES)}")
    edit.add_argument("--by", required=True, help="who is editing, e.g. eve@acme.com")
    show = commands.add_parser("show", help="print a deal as JSON")
    show.add_argument("--db", required=True, help="the store: a SQLite file or a database URL")
    show.add_argument("deal_id", help="e.g. D-881")
    return parser


if __name__ == "__main__":
    sys.exit(main())
