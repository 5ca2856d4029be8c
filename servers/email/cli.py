"""``hatp-email``: serve outgoing email, or list what was sent.

    hatp-email serve [--db email.db] [--key KEY] [--transport stdio|http] [--host H] [--port N]
                     [--smtp-host 127.0.0.1] [--smtp-port 25] [--from sales-bot@acme.com]
                     [--courier process|inline]
    hatp-email sent  --db email.db|URL

Bad input (a missing store, a bad sender address, an unusable key file) prints a message on stderr
and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hatp_journal._shared.text import json_for_people
from hatp_journal.servers.runner import add_courier_argument, add_server_arguments, key_path, run_server
from hatp_journal.toolkit.errors import KeyFileError, StoreError, ToolFailed

USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    args = _parser().parse_args(argv)
    # Imported once the command is known: --help should not wait for SQLAlchemy, nor sent for the
    # MCP stack.
    from hatp_journal.toolkit import SigningKey, create_store_engine

    from .store import check_recipients, list_sent

    if args.command == "serve":
        from .server import MailSettings, build

        try:
            [sender] = check_recipients([args.sender])
        except ToolFailed as error:
            return _bad_input(f"--from: {error.message}")
        settings = MailSettings(host=args.smtp_host, port=args.smtp_port, sender=sender)
        try:
            key = SigningKey.load_or_create(key_path(args))
        except KeyFileError as error:
            return _bad_input(str(error))
        try:
            mcp, _ = build(args.db, key, smtp=settings, courier=args.courier)
        except StoreError as error:
            return _bad_input(str(error))
        run_server(mcp, args)
        return 0
    if "://" not in args.db and not Path(args.db).is_file():
        return _bad_input(f"no email store at {args.db}")
    try:
        engine = create_store_engine(args.db)
        try:
            for sent in list_sent(engine):
                print(json_for_people(sent))
        finally:
            engine.dispose()
    except StoreError as error:  # a bad URL, a database that can't be reached (password masked)
        return _bad_input(str(error))
    return 0


def _bad_input(message: str) -> int:
    print(f"hatp-email: {message}", file=sys.stderr)
    return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hatp-email", description="Acme's journal-aware demo email server.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server")
    add_server_arguments(serve, default_db="email.db")
    serve.add_argument("--smtp-host", default="127.0.0.1", help="SMTP server that delivers the mail")
    serve.add_argument("--smtp-port", type=int, default=25)
    serve.add_argument("--from", dest="sender", default="sales-bot@acme.com", help="sender address")
    add_courier_argument(serve)
    sent = commands.add_parser("sent", help="print every sent email as one JSON line")
    sent.add_argument("--db", required=True, help="the store: a SQLite file or a database URL")
    return parser


if __name__ == "__main__":
    sys.exit(main())
