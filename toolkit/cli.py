"""``hatp-journal``: keys, schemas and receipt checks for server authors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
