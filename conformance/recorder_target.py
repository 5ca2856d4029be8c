"""How the suite drives a Recorder: a small adapter protocol, and the adapter for this project's.

A Recorder is checked through what it writes (an exported Run Record, ``hatp-run-record/1``) and
its verifier. An adapter runs the Recorder in front of the suite's stub server
(:mod:`hatp_journal.conformance.stub_server`) with a policy that forwards every call, makes the
calls an agent would, and hands back the exported record. Name an adapter on the command line as
``--recorder module:factory``. A Recorder ships its own adapter: this project's is
``hatp_journal.recorder.gateway.conformance_adapter:reference``. The values passed between suite and
adapter are in :mod:`hatp_journal._shared.recorder_adapter`, so an adapter needs nothing from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol

from hatp_journal._shared.recorder_adapter import AgentCall, RecordedRun, RecordVerdict
from hatp_journal.conformance.target import TargetError

__all__ = ["AgentCall", "RecordVerdict", "RecordedRun", "RecorderUnderTest", "load_recorder"]


class RecorderUnderTest(Protocol):
    """What the suite needs from a Recorder implementation."""

    async def journal_calls(self, server: Sequence[str], calls: Sequence[AgentCall]) -> RecordedRun:
        """Start the Recorder with the stdio ``server`` command behind it, forward
        ``calls`` as the agent, close the run and export its record."""
        ...

    async def append_remedy(self, run: RecordedRun, fixes: str, remedy: AgentCall) -> RecordedRun:
        """Journal ``remedy`` as a remedy of entry ``fixes`` in the same run; export again."""
        ...

    def verify(self, record: bytes) -> RecordVerdict:
        """Verify a record offline against the Recorder's pinned key."""
        ...


def load_recorder(spec: str) -> RecorderUnderTest:
    """The adapter a ``module:factory`` spec names, made by calling the factory."""
    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise TargetError("BAD_RECORDER", f"cannot load {spec!r} (module:factory): {error}") from None
    adapter: RecorderUnderTest = factory()
    return adapter
