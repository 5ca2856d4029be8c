"""``hatp-witness``: serve a witness that cosigns Recorders' heads (docs/witness.md).

Exit codes: 0 stopped cleanly, 2 bad input (a key or store that cannot be used).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hatp_journal.toolkit.signing import SigningKey

NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")
"""A witness's name, as ``[[witnesses]]`` names it."""


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="hatp-witness", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the witness over HTTP")
    _key(serve)
    serve.add_argument("--name", default="witness", help="the name its cosignatures carry")
    serve.add_argument("--store", default="witness.db", help="its store: a SQLite path or a database URL")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8767)
    serve.add_argument(
        "--recorder-key",
        type=Path,
        action="append",
        default=[],
        help="serve only Recorders with this key (a public key file or key file); repeat; "
        "without any, each run is bound to the key of its first head",
    )
    pubkey = commands.add_parser("pubkey", help="print the witness's public key (JSON), to pin in verifiers")
    _key(pubkey)
    args = parser.parse_args(argv)
    # lazy: --help answers before the signing stack loads
    from hatp_journal.toolkit.errors import KeyFileError, StoreError
    from hatp_journal.toolkit.signing import SigningKey

    if args.command == "serve" and not NAME.fullmatch(args.name):
        print(
            f"hatp-witness: error: --name {args.name!r}: lowercase letters, digits, dashes", file=sys.stderr
        )
        return 2
    try:
        key = SigningKey.load_or_create(args.key)
        if args.command == "pubkey":
            print(json.dumps(key.public.wire().wire()))
            return 0
        return _serve(args, key)
    except (KeyFileError, StoreError, OSError) as error:
        print(f"hatp-witness: error: {error}", file=sys.stderr)
        return 2


def _key(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--key", type=Path, default=Path("witness.key"), help="its Ed25519 key (made if absent)"
    )


def _serve(args: argparse.Namespace, key: SigningKey) -> int:
    # lazy: the serve extra is checked before starlette and uvicorn load
    from hatp_journal._shared.extras import require_extra

    require_extra("serve")  # before the store is made, not once it runs
    # lazy: only once the extra is known to be there
    import uvicorn

    from hatp_journal.recorder.witness.app import witness_app
    from hatp_journal.recorder.witness.cosign import Witness
    from hatp_journal.recorder.witness.store import WitnessStore

    allowed = []
    if args.recorder_key:
        from hatp_journal.recorder.record.key_files import pinned_key  # lazy: only with --recorder-key

        allowed = [pinned_key(path) for path in args.recorder_key]
    store = WitnessStore(args.store)
    witness = Witness(args.name, key, store, recorder_keys={k.kid: k for k in allowed} if allowed else None)
    print(
        f"hatp-witness: {args.name} ({key.kid}) on http://{args.host}:{args.port}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(witness_app(witness), host=args.host, port=args.port, log_level="warning", access_log=False)
    store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
