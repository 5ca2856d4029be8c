"""``hatp-journal``: keys, schemas and receipt checks for server authors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hatp_journal._shared.text import json_for_people, shown
from hatp_journal.toolkit.errors import KeyFileError


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input)."""
    parser = argparse.ArgumentParser(prog="hatp-journal", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    keygen = commands.add_parser("keygen", help="create an Ed25519 signing key file (mode 0600)")
    keygen.add_argument("path", type=Path)
    show = commands.add_parser("pubkey", help="print the public key and kid of a key file")
    show.add_argument("path", type=Path)
    schema = commands.add_parser("schema", help="write the wire format's JSON Schemas")
    schema.add_argument("directory", type=Path, nargs="?", default=Path("docs/schema"))
    waiting = commands.add_parser(
        "pending", help="list a server's after-commit actions that have not run yet, or drop one"
    )
    waiting.add_argument("--db", required=True, help="the server's store: a SQLite file or a database URL")
    waiting.add_argument("--all", action="store_true", help="also those that ran or were dropped")
    waiting.add_argument("--json", action="store_true", help="one JSON object per action")
    waiting.add_argument("--drop", metavar="ID", help="give up on this action (it is kept, as dropped)")
    waiting.add_argument("--by", help="with --drop: who gives up on it (required)")
    args = parser.parse_args(argv)
    if args.command == "pending":
        return _pending(args)
    # Imported here, not above: --help should not wait for pydantic and the crypto library.
    from hatp_journal.toolkit.schema import write
    from hatp_journal.toolkit.signing import SigningKey

    try:
        if args.command == "keygen":
            if args.path.exists():
                print(f"error: {args.path} exists; refusing to overwrite a key", file=sys.stderr)
                return 2
            SigningKey.generate().save(args.path)
            print(SigningKey.from_file(args.path).kid)
        elif args.command == "pubkey":
            print(json.dumps(SigningKey.from_file(args.path).public.wire().wire()))
        else:
            for path in write(args.directory):
                print(path)
    except KeyFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # schema into a folder that is a file, or not writable
        print(f"error: {error.filename}: {error.strerror or error}", file=sys.stderr)
        return 2
    return 0


def _pending(args: argparse.Namespace) -> int:
    from hatp_journal._shared.clock import utc_now, wire_time
    from hatp_journal.toolkit._after_commit import drop, pending
    from hatp_journal.toolkit.errors import StoreError
    from hatp_journal.toolkit.store import create_store_engine

    if args.drop is not None and not (args.by or "").strip():
        print(
            "hatp-journal: BAD_ARGUMENTS: --drop needs --by WHO: a person gives up on an action",
            file=sys.stderr,
        )
        return 2
    try:
        engine = create_store_engine(args.db)
    except StoreError as error:
        print(f"hatp-journal: {error.code}: {error.message}", file=sys.stderr)
        return 2
    try:
        if args.drop is not None:
            if not drop(engine, args.drop, by=args.by.strip(), now=wire_time(utc_now())):
                print(f"hatp-journal: NO_SUCH_ACTION: no action {args.drop} is waiting", file=sys.stderr)
                return 2
            print(f"dropped {args.drop} (by {args.by.strip()})")
            return 0
        for row in pending(engine, every=args.all):
            if args.json:
                print(json_for_people(row.model_dump(), sort_keys=True))
                continue
            line = (
                f"{row.id}  {row.state:<8} {row.server} {row.tool} -> {row.action}  attempts {row.attempts}"
            )
            if row.state == "pending":
                line += f", next try {row.next_try_at}"
            if row.last_error:
                line += f"  last error: {' '.join(row.last_error.split())}"
            print(shown(line))  # an error text is a server's (an SMTP reply): one line, no escapes run
    finally:
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
