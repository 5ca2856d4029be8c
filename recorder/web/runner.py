"""Approved undos run beside the pages, not inside the request that approved them.

An undo makes one call per step to tool servers (a UI step drives a browser for seconds), and an
approval counts only if the plan built again now (which asks the tool servers) is the one shown. So
the approve form answers at once with the outcome page; the check, the signed decision and then the
undo run here, and the page shows the steps as the Run Record records them and reloads until the
Reversal Record is there (or says why the approval did not count). Each undo runs on its own thread
with its own event loop, store and server connections. If it stops early (the process died, a
server was unreachable), the record says where: the outcome page offers to resume, which runs the
same plan again, and the executor compensates nothing twice. Each run and resume checks the
approver's authority again (the directory and policy as they are then): an undo whose approver lost
it halts for good, and the record says why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime

import anyio

from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.undo.actions import authority_now, decide_on_plan, run_plan
from hatp_journal.recorder.undo.errors import UndoError
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit.signing import SigningKey


@dataclass(frozen=True)
class Approval:
    """An approval pressed on a plan's page, counted here once the plan built again is the one shown."""

    person: str
    key: SigningKey
    overrides: tuple[str, ...]
    policy: Policy
    directory: Directory
    at: datetime


class UndoRunner:
    """Runs approved plans in the background, at most one thread per plan in this process."""

    def __init__(self, config: RecorderConfig, clock: Callable[[], datetime]) -> None:
        self.config = config
        self.clock = clock
        self._threads: dict[str, threading.Thread] = {}
        self._stopped: dict[str, str] = {}  # plan → why its last attempt here stopped early
        self._lock = threading.Lock()

    def start(self, ref: str, approval: Approval | None = None) -> bool:
        """Start running plan ``ref`` (first counting ``approval``, if given) unless it is running here
        already; whether it was started."""
        with self._lock:
            if self.running(ref):
                return False
            self._stopped.pop(ref, None)
            thread = threading.Thread(target=self._run, args=(ref, approval), name=f"undo {ref}", daemon=True)
            self._threads[ref] = thread
            thread.start()
            return True

    def running(self, ref: str) -> bool:
        """Whether plan ``ref`` is being run by this process now."""
        thread = self._threads.get(ref)
        return thread is not None and thread.is_alive()

    def stopped(self, ref: str) -> str | None:
        """Why this process's last run of ``ref`` stopped before its Reversal Record; None if it didn't."""
        return self._stopped.get(ref)

    def join(self, timeout: float) -> None:
        """Give running undos up to ``timeout`` seconds to finish (on shutdown; resume covers the rest)."""
        for thread in list(self._threads.values()):
            thread.join(timeout)

    def _run(self, ref: str, approval: Approval | None) -> None:
        try:
            anyio.run(self._execute, ref, approval)
        except UndoError as error:
            self._stopped[ref] = f"{error.code}: {error.message}"
        except Exception as error:  # noqa: BLE001 - anything else is shown on the page, not lost
            self._stopped[ref] = f"{type(error).__name__}: {error}"

    async def _execute(self, ref: str, approval: Approval | None) -> None:
        store = RunStore(self.config.recorder.store, SigningKey.load_or_create(self.config.recorder.key))
        try:
            async with AsyncExitStack() as stack:
                servers = UndoServers(self.config, store, stack)
                if approval is not None:
                    outcome = await decide_on_plan(
                        store,
                        approval.policy,
                        approval.directory,
                        servers,
                        ref,
                        "approve",
                        person=approval.person,
                        key=approval.key,
                        overrides=approval.overrides,
                        now=approval.at,
                    )
                    if not outcome.counted:  # the record says why; the outcome page shows it
                        return
                await run_plan(store, ref, servers, self.clock(), authority_now(self.config))
        finally:
            store.dispose()
