"""hatp_journal.conformance: the suite any journal-aware tool server or Recorder runs against itself.

``hatp-conformance --target "<command>"`` (or ``--target http://…/mcp``, or ``--recorder
module:factory``) runs it from the command line; the pytest plugin (``--hatp-target``) runs it
inside a test suite. Every check names a requirement of ``requirements.toml``, which points at
docs/protocol.md. Passing it is how an operation becomes "verified" for the Recorder's ``requireVerified``
policy: see :func:`attest`. What a target must offer is in ``docs/conformance.md``.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.conformance.attestation import Attestation, attest, verify_attestation
    from hatp_journal.conformance.expected import (
        ExpectedFailure,
        ExpectedFailuresError,
        load_expected_failures,
    )
    from hatp_journal.conformance.manifest import Requirement, requirements
    from hatp_journal.conformance.recorder_target import (
        AgentCall,
        RecordedRun,
        RecorderUnderTest,
        RecordVerdict,
    )
    from hatp_journal.conformance.report import summary
    from hatp_journal.conformance.results import CheckOutcome, SuiteResult
    from hatp_journal.conformance.runner import run_recorder_suite, run_server_suite
    from hatp_journal.conformance.target import Target, TargetError
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.conformance.attestation": ["Attestation", "attest", "verify_attestation"],
            "hatp_journal.conformance.expected": [
                "ExpectedFailure",
                "ExpectedFailuresError",
                "load_expected_failures",
            ],
            "hatp_journal.conformance.manifest": ["Requirement", "requirements"],
            "hatp_journal.conformance.recorder_target": [
                "AgentCall",
                "RecordedRun",
                "RecorderUnderTest",
                "RecordVerdict",
            ],
            "hatp_journal.conformance.report": ["summary"],
            "hatp_journal.conformance.results": ["CheckOutcome", "SuiteResult"],
            "hatp_journal.conformance.runner": ["run_recorder_suite", "run_server_suite"],
            "hatp_journal.conformance.target": ["Target", "TargetError"],
        },
    )

__all__ = [
    "AgentCall",
    "Attestation",
    "CheckOutcome",
    "ExpectedFailure",
    "ExpectedFailuresError",
    "RecordVerdict",
    "RecordedRun",
    "RecorderUnderTest",
    "Requirement",
    "SuiteResult",
    "Target",
    "TargetError",
    "attest",
    "load_expected_failures",
    "requirements",
    "run_recorder_suite",
    "run_server_suite",
    "summary",
    "verify_attestation",
]
