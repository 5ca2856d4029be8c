"""This Recorder's adapter for the conformance suite's Recorder checks (protocol.md §13).

``hatp-conformance --recorder hatp_journal.recorder.gateway.conformance_adapter:reference`` runs them: the
gateway in process, the suite's stub server behind it as a real stdio child, a policy that
forwards every call, and ``verify_record`` with this adapter's Recorder key pinned.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path

from hatp_journal._shared.recorder_adapter import AgentCall, RecordedRun, RecordVerdict
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import Autonomy, Policy
from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.recorder.record.written_bodies import RemedyCall
from hatp_journal.toolkit.signing import SigningKey

STUB = "stub"
"""The name the stub server gets behind the Recorder."""


class ReferenceRecorder:
    """The suite's ``RecorderUnderTest`` for ``hatp_journal.recorder`` (its gateway and Run Record store)."""

    def __init__(self) -> None:
        self._workdir = tempfile.TemporaryDirectory(prefix="hatp-conformance-recorder-")
        self.key = SigningKey.generate()
        self._runs = 0

    async def journal_calls(self, server: Sequence[str], calls: Sequence[AgentCall]) -> RecordedRun:
        """Run the gateway in process; the stub server is a real stdio child."""
        self._runs += 1
        folder = Path(self._workdir.name) / f"run-{self._runs}"
        folder.mkdir()
        store = RunStore(folder / "recorder.db", self.key)
        config = RecorderConfig(
            recorder=RecorderSection(
                store=str(folder / "recorder.db"), agent="conformance", principal="suite"
            ),
            servers={STUB: ServerConfig(command=server[0], args=list(server[1:]))},
        )
        everything = Autonomy(compensate="allow", none="allow", unknown="allow", read="allow")
        recorder = Recorder(config, store=store, policy=Policy(autonomy=everything))
        async with AsyncExitStack() as stack:
            await recorder.start(stack)
            for call in calls:
                await recorder.handle(STUB, call.tool, dict(call.arguments))
            recorder.close()
        assert recorder.run_id is not None
        return RecordedRun(store.export(recorder.run_id).to_bytes(), (store, recorder.run_id))

    async def append_remedy(self, run: RecordedRun, fixes: str, remedy: AgentCall) -> RecordedRun:
        """The gateway's ``remedy`` waits for a person's approval, and the suite has no person: the
        entry goes through the Run Record store."""
        store, run_id = run.handle
        body = RemedyCall(server=STUB, tool=remedy.tool, arguments=dict(remedy.arguments), remedies=fixes)
        store.append(run_id, "call", body.wire())  # a remedy is a call naming what it remedies
        return RecordedRun(store.export(run_id).to_bytes(), run.handle)

    def verify(self, record: bytes) -> RecordVerdict:
        """``verify_record`` with this adapter's Recorder key pinned."""
        report = verify_record(record, recorder_keys={self.key.kid: self.key.public})
        return RecordVerdict(report.ok, frozenset(report.codes()))


def reference() -> ReferenceRecorder:
    """The adapter the command line names: ``hatp_journal.recorder.gateway.conformance_adapter:reference``."""
    return ReferenceRecorder()
