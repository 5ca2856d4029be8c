"""``hatp-ui serve``: the invoicing tools of a web app, acting only through its user interface.

    hatp-ui serve --app-url http://127.0.0.1:8765 [--db ui.db] [--key KEY] [--chromium /usr/bin/chromium]
                  [--retention-days N] [--evidence-dir DIR] [--page-timeout-ms 5000]
                  [--transport stdio|http] [--host H] [--port N]

Bad input (an app whose Trash window can't be read and no --retention-days, a --retention-days
that disagrees with the app, no chromium, an unusable key) prints a message on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from hatp_journal.servers.runner import add_server_arguments, key_path, run_server
from hatp_journal.toolkit.errors import KeyFileError, StoreError, ToolFailed

from .constants import DEFAULT_CHROMIUM, SERVER

USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed the problem itself
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    # Imported once the command is known: --help should not wait for the MCP stack and the browser.
    from hatp_journal.toolkit import SigningKey

    from .server import RetentionMismatch, UiSettings, build

    try:
        settings = UiSettings(
            app_url=args.app_url,
            db=args.db,
            key=SigningKey.load_or_create(key_path(args)),
            chromium=args.chromium,
            retention_days=args.retention_days,
            evidence_dir=args.evidence_dir,
            server=args.server_id,
            timeout_ms=args.page_timeout_ms,
        )
        server = build(settings)
    except (ToolFailed, RetentionMismatch, KeyFileError, StoreError) as error:
        message = error.message if isinstance(error, ToolFailed) else str(error)
        print(f"hatp-ui serve: {message}", file=sys.stderr)
        return USAGE_ERROR
    try:
        run_server(server.mcp, args)
    finally:
        server.browser.close()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hatp-ui", description="Journal-aware invoicing tools that act through a web app's UI."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the tools over MCP (stdio or streamable HTTP)")
    serve.add_argument("--app-url", type=_http_url, required=True, help="the app's start page")
    add_server_arguments(serve, default_db="ui.db")
    serve.add_argument("--chromium", type=Path, default=DEFAULT_CHROMIUM, help="chromium executable")
    serve.add_argument(
        "--retention-days",
        type=_positive,
        default=None,
        help="the app's Trash retention (the undo window); read from the app when omitted, "
        "and must match it when the app answers",
    )
    serve.add_argument(
        "--evidence-dir", type=Path, default=None, help="where undo screenshots go; default <db>.evidence"
    )
    serve.add_argument("--server-id", default=SERVER, help=f"names the server in receipts (default {SERVER})")
    serve.add_argument(
        "--page-timeout-ms", type=_positive, default=5_000, help="bound on every wait in the browser"
    )
    return parser


def _http_url(text: str) -> str:
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


if __name__ == "__main__":
    sys.exit(main())
