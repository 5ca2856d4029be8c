"""``hatp-conformance``: run the suite against a tool server or a Recorder.

    hatp-conformance --target "hatp-crm serve --db /tmp/crm.db"      # a stdio server (started here)
    hatp-conformance --target http://127.0.0.1:8000/mcp              # a server in testing mode
    hatp-conformance --recorder hatp_journal.recorder.gateway.conformance_adapter:reference
        [--expected-failures xfail.toml] [--json result.json] [--allow-skips]
        [--attest crm.attestation.json --attest-key conformance.key]

Exit status: 0 when everything passed (expected failures included), 1 when a check failed or an
expected failure passed, 2 for bad input or a target that can't be tested, 3 when nothing failed but
some checks were skipped as not testable (``--allow-skips`` makes that 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hatp_journal._shared.extras import needs_extras
from hatp_journal.toolkit.errors import KeyFileError

if TYPE_CHECKING:
    from hatp_journal.conformance.results import SuiteResult

PASSED, FAILED, USAGE_ERROR, INCOMPLETE = 0, 1, 2, 3


@needs_extras  # the suite's MCP client is the `serve` extra
def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.target and not args.recorder:
        parser.error("give --target (a tool server), --recorder (a Recorder adapter), or both")
    if args.attest and not (args.attest_key and args.target):
        parser.error("--attest needs --attest-key and a --target whose operations it attests")
    # Imported once the arguments are read: --help should not wait for the MCP stack.
    import anyio

    from hatp_journal._shared.canonical import canonical_bytes
    from hatp_journal._shared.clock import utc_now
    from hatp_journal.conformance.attestation import NothingToAttest, attest
    from hatp_journal.conformance.expected import ExpectedFailuresError, load_expected_failures
    from hatp_journal.conformance.report import summary
    from hatp_journal.conformance.runner import run_suites
    from hatp_journal.conformance.target import TargetError
    from hatp_journal.toolkit.signing import SigningKey

    try:
        expected = load_expected_failures(args.expected_failures) if args.expected_failures else []
        key = SigningKey.load_or_create(args.attest_key) if args.attest else None
        results = anyio.run(run_suites, args.target, args.recorder, expected)
        for result in results:
            print(summary(result))
        if args.json:
            document: Any = results[0].wire() if len(results) == 1 else [result.wire() for result in results]
            args.json.write_bytes(canonical_bytes(document))
        if key is not None:
            [served] = [result for result in results if result.kind == "server"]
            args.attest.write_bytes(canonical_bytes(attest(served, key, utc_now()).wire()))
            print(f"attestation for {served.verified_operations or 'no operation'} written to {args.attest}")
    except (TargetError, ExpectedFailuresError) as error:
        return _refuse(f"{error.code}: {error}")
    except (KeyFileError, NothingToAttest, OSError) as error:
        return _refuse(str(error))
    return exit_status(results, allow_skips=args.allow_skips)


def exit_status(results: list[SuiteResult], *, allow_skips: bool) -> int:
    """FAILED over INCOMPLETE over PASSED: a skipped check is not a passed one unless allowed."""
    if not all(result.passed for result in results):
        return FAILED
    if not allow_skips and any(result.skipped() for result in results):
        return INCOMPLETE
    return PASSED


def _refuse(message: str) -> int:
    print(f"hatp-conformance: {message}", file=sys.stderr)
    return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hatp-conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", help="a command that starts a stdio MCP server, or its http(s):// URL")
    parser.add_argument("--recorder", help="a Recorder adapter as module:factory")
    parser.add_argument(
        "--expected-failures", type=Path, help="TOML file of expected failures, each with a reason"
    )
    parser.add_argument("--json", type=Path, help="write the machine-readable result here")
    parser.add_argument(
        "--attest", type=Path, help="write a signed attestation of the verified operations here"
    )
    parser.add_argument(
        "--attest-key", type=Path, help="the conformance signer's Ed25519 key (created on first use)"
    )
    parser.add_argument(
        "--allow-skips",
        action="store_true",
        help="exit 0, not 3, when nothing failed but some checks could not be tested",
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
