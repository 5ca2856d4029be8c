"""An organisation whose Recorder undoes calls of servers that know nothing of undo.

Everything runs in one event loop and one process: the agent's session through the Recorder, the
people's asks and decisions, the undo (``UndoServers``, as ``hatp-recorder`` would run it). The
tool servers are the real ones (stdio) or in memory (``embedded``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.runs.asks import Asks
from hatp_journal.recorder.runs.keys import RunSessions
from hatp_journal.recorder.undo.actions import ask_for_plan, authority_now, decide_on_plan, run_plan
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.planner import UndoRequest
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url

LEAD = "human://acme.com/role/team-lead"
DANA = "human://acme.com/dana"
LEE = "human://acme.com/lee"
CLASSES = {"R0": "allow", "R1": "allow-notify", "R2": "allow-notify", "R3": "ask", "R4": "never-autonomous"}


@dataclass
class HostOrg:
    """A Recorder's store, policy and directory in ``root``, and what its people do."""

    root: Path
    servers: dict[str, ServerConfig]
    embedded: Mapping[str, FastMCP] = field(default_factory=dict)
    keys: dict[str, SigningKey] = field(default_factory=dict)

    @classmethod
    def make(cls, root: Path, servers: dict[str, ServerConfig], policy: dict[str, Any], **kw: Any) -> HostOrg:
        """Write the directory (Dana, and Lee who holds the team lead's role) and ``policy``."""
        org = cls(root, servers, **kw)
        people = []
        for person, roles in ((DANA, []), (LEE, [LEAD])):
            org.keys[person] = SigningKey.generate()
            public = b64url(org.keys[person].public.raw())
            people.append(
                {"id": person, "name": person.rsplit("/", 1)[-1].title(), "roles": roles, "publicKey": public}
            )
        (root / "directory.json").write_text(json.dumps({"people": people}))
        written = {"autonomy": {"classes": CLASSES, "approver": LEAD}, "undoAuthority": LEAD, **policy}
        (root / "policy.json").write_text(json.dumps(written, indent=2))
        org.store = RunStore(root / "recorder.db", SigningKey.generate())
        return org

    store: RunStore = field(init=False)

    @property
    def config(self) -> RecorderConfig:
        section = RecorderSection(
            policy=str(self.root / "policy.json"),
            directory=str(self.root / "directory.json"),
            agent="ops-bot",
            principal=DANA,
        )
        return RecorderConfig(recorder=section, servers=self.servers)

    async def session(self, stack: AsyncExitStack) -> tuple[Recorder, Client[Any]]:
        """The Recorder started in ``stack`` and the agent connected to it."""
        policy = load_policy(self.root / "policy.json", directory=self.root / "directory.json")
        recorder = Recorder(self.config, store=self.store, policy=policy, embedded=self.embedded)
        mcp = await recorder.start(stack)
        client = await stack.enter_async_context(Client(mcp))
        return recorder, client

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[SharedSession]:
        """One Recorder, its agent and the undo's connections for many state-machine examples: the
        server processes start once, each example is a run of its own (:meth:`SharedSession.next_run`)."""
        async with AsyncExitStack() as stack:
            recorder, agent = await self.session(stack)
            yield SharedSession(recorder, agent, self.undo_servers(stack))
            recorder.close()

    def approve_call(self, answer: Any) -> None:
        """Lee approves the call ``answer`` said waits (its ask)."""
        ask = answer.structured_content
        ref = f"{ask['run']}/{ask['ask']}"
        directory = Directory.load(self.root / "directory.json")
        outcome = Asks(self.store).decide(
            ref, "approve", person=LEE, key=self.keys[LEE], directory=directory, now=utc_now()
        )
        assert outcome.counted, outcome.message

    def undo_servers(self, stack: AsyncExitStack) -> UndoServers:
        """The undo's connections to the servers, opened in ``stack`` (one set for several undos)."""
        return UndoServers(self.config, self.store, stack, self.embedded)

    async def undo(
        self,
        servers: UndoServers,
        run: str,
        request: UndoRequest,
        overrides: tuple[str, ...] | Callable[[dict[str, Any]], tuple[str, ...]] = (),
    ) -> tuple[dict[str, Any], Entry | None]:
        """Dana plans the undo, Lee approves it (overriding ``overrides``) and it runs: the plan as
        JSON and the Reversal Record (None when the approval did not count, or when nothing could be
        undone: the plan is then the one shown to Dana and never filed, NOTHING_TO_UNDO)."""
        policy = load_policy(self.root / "policy.json", directory=self.root / "directory.json")
        directory = Directory.load(self.root / "directory.json")
        try:
            ask = await ask_for_plan(
                self.store, policy, directory, servers, run, request, by=DANA, now=utc_now()
            )
        except UndoError as error:
            if error.code != UndoCode.NOTHING_TO_UNDO or error.unfiled is None:
                raise
            return error.unfiled.wire(), None
        if callable(overrides):  # chosen from the plan Lee approves (its conflicts, say)
            overrides = overrides(ask.plan.wire())
        decided = await decide_on_plan(
            self.store, policy, directory, servers, ask.ref, "approve",
            person=LEE, key=self.keys[LEE], overrides=overrides, now=utc_now(),
        )  # fmt: skip
        if not decided.counted:
            return ask.plan.wire(), None
        reversal = await run_plan(self.store, ask.ref, servers, utc_now(), authority_now(self.config))
        return ask.plan.wire(), reversal


@dataclass
class SharedSession:
    """A Recorder session kept across examples (:meth:`HostOrg.shared`)."""

    recorder: Recorder
    agent: Client[Any]
    servers: UndoServers

    def next_run(self) -> None:
        """Close the run so far (its head is signed) and let the next call open a new one, as a new
        ``hatp-recorder`` process would, without starting the servers again."""
        self.recorder.close()
        section = self.recorder.config.recorder
        self.recorder.sessions = RunSessions(
            self.recorder.store, agent=section.agent, principal=section.principal, configured=section.run_key
        )


def statuses(reversal: Entry | None) -> dict[str, str]:
    """Each step's status in a Reversal Record, by entry id."""
    assert reversal is not None
    return {line["entry"]: line["status"] for line in reversal.body["steps"]}
