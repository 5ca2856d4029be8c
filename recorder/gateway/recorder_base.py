"""What every part of the Recorder's gateway shares: its stores, the policy and the ledger, and how it
appends, decides and refuses a call.

:class:`~hatp_journal.recorder.gateway.core.Recorder` builds on it with the data plane itself
(answering, holding and forwarding a call).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import ToolResult

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.changes.links import LinkedCall
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway import kept_tools
from hatp_journal.recorder.gateway.arguments import Refusal, check_arguments
from hatp_journal.recorder.gateway.call_body import call_wire
from hatp_journal.recorder.gateway.call_facts import for_call, tool_facts
from hatp_journal.recorder.gateway.downstream import Downstream
from hatp_journal.recorder.gateway.forward_tool import (
    request_meta,
)
from hatp_journal.recorder.gateway.relay_rounds import Rounds
from hatp_journal.recorder.gateway.replies import (
    host_meta,
    refused_answer,
    tool_result,
)
from hatp_journal.recorder.gateway.retries import (
    KeyRefusal,
    Retries,
)
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.intake.tokens import (
    recorder_announcement,
)
from hatp_journal.recorder.policy import CallFacts, Policy
from hatp_journal.recorder.policy.decide import Decision, same_for_every_call
from hatp_journal.recorder.policy.registry_compensation import Compensation
from hatp_journal.recorder.policy.stored_ledger import Hold, StoredLedger
from hatp_journal.recorder.record import RunStore, UnknownEntry, UnknownRun
from hatp_journal.recorder.record.answers import FoundAnswer, KeptAnswer
from hatp_journal.recorder.record.entry_bodies import asked_in
from hatp_journal.recorder.record.kinds import EntryKind
from hatp_journal.recorder.record.models import Entry
from hatp_journal.recorder.record.written_bodies import HostNote, NoteRecord, RefusedRecord
from hatp_journal.recorder.runs.asks import Ask, Asks, call_digest
from hatp_journal.recorder.runs.keys import RunKeyRefusal, RunSessions
from hatp_journal.recorder.tracing import traced


class RecorderBase:
    """The Recorder's state and its shared steps: appending, deciding, refusing."""

    def __init__(
        self,
        config: RecorderConfig,
        *,
        store: RunStore,
        policy: Policy,
        ledger: StoredLedger | None = None,
        clock: Any = utc_now,
        embedded: Mapping[str, FastMCP] | None = None,
    ) -> None:
        """``embedded`` names servers running in this process, reached in memory (e.g. in tests).

        The money ledger is the store's own unless ``ledger`` is given: every Recorder on one
        store shares what was spent, across restarts.
        """
        self.config = config
        self.store = store
        self.policy = policy
        self.ledger = ledger or StoredLedger(store.engine)
        self.clock = clock
        pins = self.pins = PinStore(store.engine)
        self.downstreams = {
            name: Downstream(name, server, pins, (embedded or {}).get(name))
            for name, server in config.servers.items()
        }
        for downstream in self.downstreams.values():
            # Tokens minted for our calls are bound to our key: useless to anyone else.
            downstream.request_meta = recorder_announcement(store.public_key)
        self.mcp = FastMCP("hatp-recorder")
        self.asks = Asks(store)
        section = config.recorder
        self.sessions = RunSessions(
            store, agent=section.agent, principal=section.principal, configured=section.run_key
        )
        self.forwards: dict[str, tuple[str, str]] = {}  # agent-facing name -> (server, tool)
        self._facts_of: dict[tuple[str, str], CallFacts] = {}  # each tool's facts, read at connect
        self._in_flight = 0  # calls being answered now, by any agent of this Recorder
        self._decided: dict[tuple[str, str], tuple[Decision, dict[str, Any]]] = {}  # see _decide
        self.retries = Retries(store, section.retry_window_seconds, section.max_journal_bytes)
        self.rounds = Rounds()  # 2026-era calls whose server asked the agent something, between rounds

    @property
    def run_id(self) -> str | None:
        """This process's own run, once a call opened it (calls may name others by run key)."""
        return self.sessions.own

    def own_run(self) -> str:
        """This process's own run, opened now if no call opened it yet."""
        return self.sessions.own_run(self.clock())

    def _in_doubt(self, run: str, ask: Ask, call: dict[str, Any]) -> dict[str, Any]:
        """Report an approved call whose Recorder died after sending it, before its answer was journaled.

        Sending it again could make it twice, and nothing says whether the server made it: the ask
        is settled as ``CALL_IN_DOUBT`` with what is known, for the approver to see (``asks``, the web).
        """
        claim = self.sessions.keys.claim_of(run, ask.entry.id)
        sent = claim.sent if claim is not None and claim.sent else "an unknown time"
        why = (
            f"the Recorder that was making this approved call sent it to {call['server']} at {sent} and"
            " stopped before its answer was recorded: whether it was made is unknown; it is not sent again"
        )
        entry = self.asks.settle(
            run, ask, "refused", {**call_wire(call), "code": "CALL_IN_DOUBT", "why": why}
        )
        return refused_answer("CALL_IN_DOUBT", why, entry.id)

    async def _refuse_run_key(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        refusal: RunKeyRefusal,
        host: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Journal a call whose run key can't be used in this process's own run, and refuse it.

        The arguments are kept as for any call, or, if the record can't hold them, what is kept of them.
        """
        own = self.own_run()
        body = self._refused(server, tool, arguments, str(refusal.code), host, runKeyDigest=refusal.digest)
        entry = await self._append(own, "refused", body.wire())
        return refused_answer(str(refusal.code), refusal.message, entry.id)

    def _refused(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        code: str,
        host: dict[str, Any] | None,
        **extra: Any,
    ) -> RefusedRecord:
        """A refused call's record: its arguments as for any call, or what is kept of those the
        record can't hold."""
        checked = check_arguments(arguments, self.config.recorder.max_arguments_bytes)
        kept = {"arguments": arguments} if checked.refusal is None else checked.refusal.kept
        return RefusedRecord.model_validate(
            {
                "agent": self.config.recorder.agent,
                "principal": self.config.recorder.principal,
                "server": server,
                "tool": tool,
                **kept,
                "code": code,
                "argumentsDigest": checked.digest,
                **extra,
                "host": host,
            }
        )

    async def _refuse_key(
        self,
        run: str,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        refusal: KeyRefusal,
        host: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Journal a call whose idempotency key can't be used, and refuse it (it is not forwarded)."""
        body = self._refused(server, tool, arguments, str(refusal.code), host)
        entry = await self._append(run, "refused", body.wire())
        return refused_answer(str(refusal.code), refusal.message, entry.id)

    async def _refuse_arguments(
        self, run: str, server: str, tool: str, refusal: Refusal, host: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Journal a call whose arguments the record can't hold, without them, and refuse it.

        Refused before the policy and never forwarded: the tool server's receipt would sign an
        arguments digest that can't be computed, and an ask would need one to be approved.
        """
        body = RefusedRecord.model_validate(
            {
                "agent": self.config.recorder.agent,
                "principal": self.config.recorder.principal,
                "server": server,
                "tool": tool,
                "code": refusal.code,
                **refusal.kept,
                "host": host,
            }
        )
        entry = await self._append(run, "refused", body.wire())
        return refused_answer(refusal.code, refusal.message(), entry.id)

    async def append_call(self, run: str, body: dict[str, Any]) -> Entry:
        """Append a ``call`` entry the Recorder made itself (a resource read), linked like any call."""
        links, linked = self.sessions.state(run).links, LinkedCall.of(body)
        body["links"] = links.links(linked)
        entry = await self._append(run, "call", body)
        links.add(entry.id, linked)
        return entry

    async def append_note(self, run: str, body: NoteRecord | HostNote) -> Entry:
        """Append a ``note`` entry (an agent tool's call, or what the Recorder did itself: no step of
        the run)."""
        return await self._append(run, "note", body.wire())

    async def refuse_unknown_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Journal a call of a tool the Recorder does not publish as refused, and answer UNKNOWN_TOOL."""
        run = self.own_run()
        checked = check_arguments(arguments, self.config.recorder.max_arguments_bytes)
        kept = {"arguments": arguments, "argumentsDigest": checked.digest}
        body = RefusedRecord.model_validate(
            {
                "agent": self.config.recorder.agent,
                "principal": self.config.recorder.principal,
                "tool": name,
                "code": "UNKNOWN_TOOL",
                **(kept if checked.refusal is None else checked.refusal.kept),
                "host": host_meta(request_meta()),
            }
        )
        entry = await self._append(run, "refused", body.wire())
        return tool_result(
            refused_answer("UNKNOWN_TOOL", f"the Recorder publishes no tool {name!r}", entry.id)
        )

    @traced(
        "hatp.append",
        lambda a: {"run": a["run"], "kind": a["kind"]},
        result=lambda entry: {"entry": entry.id},
    )
    async def _append(
        self,
        run: str,
        kind: EntryKind,
        body: dict[str, Any],
        tokens: list[tuple[str, str, str]] | None = None,
        answer: KeptAnswer | None = None,
    ) -> Entry:
        """Append durably, without holding up other calls.

        A call alone appends right here: the loop has nothing else to run meanwhile, and a hand-off
        to the writer thread and back costs two thread switches. With other calls in flight the
        writer thread commits, so they run on during the fsync, and shares commits among them.
        """
        if self._in_flight <= 1:
            return self.store.append(run, kind, body, tokens=tokens or (), answer=answer)
        return await self.store.append_async(run, kind, body, tokens=tokens or (), answer=answer)

    def _approved(self, run: str, found: FoundAnswer) -> bool:
        """Whether the call ``found`` answered was made on a person's approval. A tool of a server
        that knows nothing of undo may be a poll: the same call again is a retry only then (or
        with an idempotency key), never a stale answer to a new question."""
        try:
            return asked_in(self.store.entry(run, found.entry)) is not None
        except (UnknownEntry, UnknownRun):
            return False

    async def _append_linked(
        self,
        run: str,
        call: dict[str, Any],
        tokens: list[tuple[str, str, str]] | None = None,
        answer: KeptAnswer | None = None,
    ) -> Entry:
        """Append a ``call`` entry linked to the run's earlier calls, and one later calls may link to."""
        links = self.sessions.state(run).links
        linked = LinkedCall.of(call_wire(call))
        body = call_wire({**call, "links": links.links(linked)})
        entry = await self._append(run, "call", body, tokens, answer)
        links.add(entry.id, linked)
        return entry

    @traced(
        "hatp.decide",
        lambda a: {"server": a["facts"].server, "tool": a["facts"].tool},
        result=lambda decided: {"action": str(decided[0].action)},
    )
    def _decide(self, facts: CallFacts) -> tuple[Decision, Hold | None, dict[str, Any] | None]:
        """The ledger's decision (and hold) for the call, and the decision as recorded if it was made
        once: the same for every call of a tool whose decision nothing in the call can change
        (``same_for_every_call``). Entries share that recorded form; nothing changes it."""
        if not same_for_every_call(self.policy, facts):
            decision, held = self.ledger.decide(self.policy, facts)
            return decision, held, None
        decided = self._decided.get((facts.server, facts.tool))
        if decided is None:
            decision, _ = self.ledger.decide(self.policy, facts)  # no amount: nothing held
            decided = self._decided[facts.server, facts.tool] = (decision, decision.wire())
        return decided[0], None, decided[1]

    def _compensation(self, downstream: Downstream, tool: str) -> Compensation | None:
        """How the host undoes ``tool`` (host_undo.py); never for a journal-aware server, which
        undoes its own calls."""
        if downstream.journal_aware:
            return None
        return self.policy.host_registry().compensation(downstream.name, tool)

    def _open_ask(self, run: str, server: str, tool: str, arguments: dict[str, Any]) -> Ask | None:
        """The latest not yet used ask for exactly this call in this run."""
        digest = call_digest(server, tool, arguments)
        # An unreadable ask is nobody's: the call asks again rather than follow what can't be read.
        matching = [
            a for a in self.asks.all(run) if a.state != "unreadable" and a.terms.call_digest == digest
        ]
        latest = matching[-1] if matching else None
        return latest if latest is not None and latest.state != "used" else None

    def _directory(self) -> Directory | None:
        path = self.config.recorder.directory
        return Directory.load(Path(path)) if path else None

    def _facts(
        self, downstream: Downstream, tool: str, arguments: dict[str, Any], now: datetime, run: str
    ) -> CallFacts:
        facts = self._facts_of.get((downstream.name, tool))
        if facts is None:  # a tool not published at start (only a direct handle() call)
            facts = tool_facts(downstream, tool)
        return for_call(facts, arguments, now, run)

    def _keep_tools(self, downstream: Downstream) -> None:
        """Keep what the server listed for ``hatp-recorder explain`` (``recorder/gateway/kept_tools.py``),
        beside the store when it is a SQLite file."""
        url = self.store.engine.url
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return
        pinned = kept_tools.pinned_in(downstream.config, self.pins, downstream.name)
        kept_tools.keep(url.database, downstream, pinned)

    def _ask_state(self, run: str, ask: str) -> str:
        return next((a.state for a in self.asks.all(run) if a.entry.id == ask), "pending")
