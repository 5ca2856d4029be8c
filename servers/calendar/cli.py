"""``hatp-calendar``: serve the calendar, or edit and show its events from outside any agent run.

    hatp-calendar serve [--db calendar.db] [--key FILE] [--transport stdio|http] [--host H] [--port N]
                        [--smtp-host 127.0.0.1] [--smtp-port 25] [--organizer sales-bot@acme.com]
                        [--courier process|inline]
    hatp-calendar edit  --db DB UID [--summary TEXT] [--start TIME] [--end TIME] --by eve@acme.com
    hatp-calendar show  --db DB [UID]
    hatp-calendar outbox --db DB [--send --smtp-host 127.0.0.1 --smtp-port 25]

Bad input (unknown event, a time without a timezone, a missing database) prints a message on
stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from hatp_journal._shared.text import json_for_people
from hatp_journal.servers.calendar.constants import DEFAULT_ORGANIZER
from hatp_journal.servers.runner import add_courier_argument, add_server_arguments, key_path, run_server
from hatp_journal.toolkit.errors import KeyFileError, StoreError

USAGE_ERROR = 2


class _BadInput(Exception):
    """Input the command refuses; the message goes to stderr."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed the problem itself
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    # Imported once the command is known: --help should not wait for the MCP stack and SQLAlchemy.
    from hatp_journal.servers.calendar.itip import InvalidEventError
    from hatp_journal.servers.calendar.store import UnknownEventError

    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "edit":
            return _edit(args)
        if args.command == "outbox":
            return _outbox(args)
        return _show(args)
    except (_BadInput, InvalidEventError, UnknownEventError, KeyFileError, StoreError) as error:
        print(f"hatp-calendar {args.command}: {error}", file=sys.stderr)
        return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hatp-calendar", description="A journal-aware calendar MCP server.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the calendar over MCP (stdio or streamable HTTP)")
    add_server_arguments(serve, default_db="calendar.db")
    serve.add_argument("--smtp-host", default="127.0.0.1", help="SMTP server for invitations")
    serve.add_argument("--smtp-port", type=_port, default=25, help="SMTP port (default 25)")
    serve.add_argument(
        "--organizer", default=DEFAULT_ORGANIZER, help=f"sender of invitations (default {DEFAULT_ORGANIZER})"
    )
    add_courier_argument(serve)
    edit = commands.add_parser("edit", help="a colleague's edit, outside any agent run (no mail is sent)")
    edit.add_argument("--db", required=True, help=_DB_HELP)
    edit.add_argument("uid", help="the event's UID")
    edit.add_argument("--summary")
    edit.add_argument("--start", type=_time, help="ISO 8601 with a timezone, e.g. 2026-11-05T15:00:00Z")
    edit.add_argument("--end", type=_time, help="ISO 8601 with a timezone")
    edit.add_argument("--by", required=True, help="who made the edit, e.g. eve@acme.com")
    show = commands.add_parser("show", help="list events, or print one with its stored iCalendar text")
    show.add_argument("--db", required=True, help=_DB_HELP)
    show.add_argument("uid", nargs="?", help="the event's UID (omit to list all)")
    outbox = commands.add_parser("outbox", help="print every mail notice and its state (one JSON line each)")
    outbox.add_argument("--db", required=True, help=_DB_HELP)
    outbox.add_argument(
        "--send", action="store_true", help="first send the notices still prepared (with the server stopped)"
    )
    outbox.add_argument("--smtp-host", default="127.0.0.1", help="SMTP server for --send")
    outbox.add_argument("--smtp-port", type=_port, default=25, help="SMTP port for --send (default 25)")
    return parser


def _serve(args: argparse.Namespace) -> int:
    from hatp_journal.servers.calendar.server import build, check_organizer
    from hatp_journal.toolkit import SigningKey

    check_organizer(args.organizer)
    key = SigningKey.load_or_create(key_path(args))
    mcp, _ = build(
        args.db, key, args.smtp_host, args.smtp_port, organizer=args.organizer, courier=args.courier
    )
    run_server(mcp, args)
    return 0


def _edit(args: argparse.Namespace) -> int:
    if args.summary is None and args.start is None and args.end is None:
        raise _BadInput("give at least one of --summary, --start, --end")
    if not args.by.strip():
        raise _BadInput("--by: say who made the edit, e.g. --by eve@acme.com")
    from hatp_journal.servers.calendar.store import edit_event
    from hatp_journal.toolkit import create_store_engine
    from hatp_journal.toolkit.wire import utc_now

    engine = create_store_engine(_existing(args.db))
    edited = edit_event(
        engine, args.uid, by=args.by, now=utc_now(), summary=args.summary, start=args.start, end=args.end
    )
    print(json.dumps(edited, indent=2))
    return 0


def _show(args: argparse.Namespace) -> int:
    from sqlmodel import Session

    from hatp_journal._shared.text import shown, shown_lines
    from hatp_journal.servers.calendar.store import all_events, require_event
    from hatp_journal.servers.calendar.tools import public
    from hatp_journal.toolkit import create_store_engine

    engine = create_store_engine(_existing(args.db))
    with Session(engine) as session:
        if args.uid is not None:
            row = require_event(session, args.uid)
            print(json.dumps(public(row), indent=2))  # JSON escapes every control character
            print(shown_lines(row.ics.split("\r\n")), end="")  # each iCalendar line made safe
            return 0
        for event in sorted((public(row) for row in all_events(session)), key=lambda e: e["start"]):
            # One line per event: line breaks, ANSI escapes and bidi controls in a summary are escaped.
            print("\t".join(shown(str(event[k])) for k in ("uid", "version", "status", "start", "summary")))
    return 0


def _outbox(args: argparse.Namespace) -> int:
    from sqlmodel import Session, col, select

    from hatp_journal.servers.outbox import Outbox, OutboxNotice
    from hatp_journal.toolkit import create_store_engine

    engine = create_store_engine(_existing(args.db))
    try:
        if args.send:
            Outbox(engine, args.smtp_host, args.smtp_port).flush()
        with Session(engine) as session:
            for notice in session.exec(select(OutboxNotice).order_by(col(OutboxNotice.created_at))):
                print(json_for_people(notice.view()))
    finally:
        engine.dispose()
    return 0


_DB_HELP = "the calendar's store: a SQLite file, or a database URL (postgresql://…)"


def _existing(db: str) -> str:
    """``db`` if a calendar store is there (a file, or a database holding the calendar's table).

    Opening a store creates it; a typo in --db must not silently create an empty calendar. Every
    message names the store with its password masked.
    """
    if "://" not in db:
        if not Path(db).is_file():
            raise _BadInput(f"--db: no calendar database at {db}")
        return db
    from sqlalchemy import inspect

    from hatp_journal.toolkit.store import open_store_engine, shown_url

    engine = open_store_engine(db)  # StoreError (password masked) if it can't be used
    try:
        with engine.connect() as connection:
            found = inspect(connection).has_table("cal_event")
    finally:
        engine.dispose()
    if not found:
        raise _BadInput(f"--db: no calendar in the database at {shown_url(db)}")
    return db


def _time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no timezone; add one, e.g. {text}Z")
    return moment


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {port}")
    return port
