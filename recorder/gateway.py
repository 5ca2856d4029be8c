"""The Recorder's gateway: forwards an agent's calls to tool servers and journals each one.

The agent connects to the Recorder like to any MCP server and sees every downstream tool as
``{server}_{tool}``. The binding tools are never listed and never forwarded; compensation
tokens are kept in the Run Record and stripped from what the agent receives.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.tools import Tool, ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as McpTool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import PrivateAttr

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal._shared.clock import utc_now
from hatp_journal._shared.crashpoints import crash_point
from hatp_journal.recorder import kept_tools, passthrough
from hatp_journal.recorder.agent_answers import said
from hatp_journal.recorder.arguments import Refusal, check_arguments
from hatp_journal.recorder.asks import Ask, Asks, call_digest
from hatp_journal.recorder.call_body import call_wire, outcome
from hatp_journal.recorder.call_facts import for_call, tool_facts
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.downstream import Downstream, DownstreamError
from hatp_journal.recorder.host_hints import host_annotations
from hatp_journal.recorder.host_undo import (
    HostReadFailed,
    host_member,
    snapshot_asks,
    take_snapshot,
)
from hatp_journal.recorder.intake import Intake, bounded, take_in
from hatp_journal.recorder.pins import PinStore
from hatp_journal.recorder.policy import CallFacts, Policy
from hatp_journal.recorder.policy.classify import class_of_every_call
from hatp_journal.recorder.policy.decide import Decision, same_for_every_call
from hatp_journal.recorder.policy.registry_compensation import Compensation
from hatp_journal.recorder.policy.stored_ledger import Hold, StoredLedger
from hatp_journal.recorder.previews import effect_preview
from hatp_journal.recorder.record import RunStore, UnknownEntry, UnknownRun
from hatp_journal.recorder.record.answers import FoundAnswer, KeptAnswer
from hatp_journal.recorder.record.entry_bodies import DecisionBody, asked_in, read_own
from hatp_journal.recorder.record.models import Entry
from hatp_journal.recorder.record.written_bodies import HostUndoRecord, RefusedRecord
from hatp_journal.recorder.relay import call_journal
from hatp_journal.recorder.relay_rounds import Rounds
from hatp_journal.recorder.retries import (
    CallName,
    KeyRefusal,
    Retries,
    RetryCode,
    replayed,
    sent_idempotency_key,
    unsent,
)
from hatp_journal.recorder.runs import ClaimState, RunKeyRefusal, RunSessions, sent_key
from hatp_journal.recorder.tokens import (
    BAD_JOURNAL,
    Kept,
    misplaced,
    new_call,
    recorder_announcement,
    redact,
    refused_journal,
)
from hatp_journal.recorder.tracing import answered, traced
from hatp_journal.recorder.waiting import Progress, Wait, wait_for_decision, wait_of
from hatp_journal.toolkit.wire import META_KEY

HOST_META_KEY = "hatp/host"
HOST_META_BYTES = 65_536
"""Largest ``_meta["hatp/host"]`` kept: it names a few entries, nothing more."""


class Recorder:
    """Journals every call of one agent session (one run) and applies the autonomy policy."""

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

    async def start(self, stack: AsyncExitStack, spawned: Mapping[str, Any] | None = None) -> FastMCP:
        """Connect every downstream, open the run and publish the agent-facing tools.

        ``spawned``: server processes already started, by name (``recorder/boot.py``).
        """
        from hatp_journal.recorder import agent_tools  # it reads the gateway's answers: imported here

        agent_tools.publish(self)  # first: a server name that clashes with them is refused before it starts
        if self.config.witnesses:  # every signed head goes to the witnesses (recorder/witnessing.py)
            from hatp_journal.recorder.witnessing import WitnessSender

            sender = WitnessSender(self.store, self.config.witnesses, clock=self.clock)
            sender.start()
            stack.callback(sender.stop)
        for downstream in self.downstreams.values():
            # All stdio servers boot at once; connect waits for each.
            await downstream.launch(stack, (spawned or {}).get(downstream.name))
        for downstream in self.downstreams.values():
            await downstream.connect(stack)
            self._keep_tools(downstream)
            for tool in downstream.agent_tools():
                facts = tool_facts(downstream, tool.name)
                # A class no argument can change is worked out here, once, not on every call.
                fixed = class_of_every_call(self.policy, facts)
                self._facts_of[downstream.name, tool.name] = replace(facts, reversibility=fixed)
                hints = host_annotations(tool.annotations, fixed.rclass if fixed else None)
                forward = ForwardTool.for_downstream(self, downstream.name, tool, hints)
                self.mcp.add_tool(forward)
                self.forwards[forward.name] = (downstream.name, tool.name)
            await passthrough.publish(self, downstream)
        self.mcp.instructions = passthrough.instructions(self.downstreams.values())
        self.mcp.add_middleware(passthrough.UnknownToolsRefused(self))
        idle = timedelta(seconds=self.config.recorder.run_idle_seconds)
        self.sessions.open(self.clock(), idle)  # the run itself opens at the first call
        self.retries.prune(self.clock())
        return self.mcp

    def _keep_tools(self, downstream: Downstream) -> None:
        """Keep what the server listed for ``hatp-recorder explain`` (``recorder/kept_tools.py``),
        beside the store when it is a SQLite file."""
        url = self.store.engine.url
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return
        pinned = kept_tools.pinned_in(downstream.config, self.pins, downstream.name)
        kept_tools.keep(url.database, downstream, pinned)

    @property
    def run_id(self) -> str | None:
        """This process's own run, once a call opened it (calls may name others by run key)."""
        return self.sessions.own

    def own_run(self) -> str:
        """This process's own run, opened now if no call opened it yet."""
        return self.sessions.own_run(self.clock())

    def close(self) -> bool:
        """Close this process's run (its head is signed), unless callers may come back to it.

        A run with a run key someone sent back or the host set, or with asks still to be used,
        stays open until it is idle (``run_idle_seconds``). True if the run was closed.
        """
        own = self.run_id
        if own is None:
            return False
        pending = {a.entry.id for a in self.asks.all(own) if a.state in ("pending", "approved")}
        if self.sessions.closing(pending) is None:
            return False
        self.store.close_run(own)
        return True

    async def handle(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """:meth:`answer` for a call that came through the mcp library (in memory, HTTP)."""
        # The server's progress notifications go on to the agent's request, if it asked for them.
        relaying = passthrough.progress_relay.set(passthrough.agent_progress())
        try:
            meta, progress = _request_meta(), _library_progress()
            rounds = _library_rounds()
            if rounds is None:
                return _tool_result(await self.answer(server, tool, arguments, meta, progress))
            capabilities, state, responses = rounds
            answer = await self.answer_in_rounds(
                server,
                tool,
                arguments,
                meta,
                progress,
                capabilities=capabilities,
                state=state,
                responses=responses,
            )
            if answer.get("resultType") == "input_required":
                return InputRequiredToolResult(InputRequiredResult.model_validate(answer))
            return _tool_result(answer)
        finally:
            passthrough.progress_relay.reset(relaying)

    async def answer_in_rounds(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        meta: Any,
        progress: Progress | None,
        *,
        capabilities: Any,
        state: Any,
        responses: Any,
    ) -> dict[str, Any]:
        """:meth:`answer` for an agent of the 2026 era: what its server asks the agent during the call
        comes back as an ``input_required`` round, and the agent's next request (with ``state`` and
        ``responses``) carries the answers on (``recorder/relay_rounds.py``)."""

        def identity() -> tuple[str, str, str] | None:
            """What names the call across rounds; None for arguments answer() refuses at once."""
            checked = check_arguments(arguments, self.config.recorder.max_arguments_bytes)
            return None if checked.digest is None or checked.refusal else (server, tool, checked.digest)

        return await self.rounds.answer(
            identity,
            lambda: self.answer(server, tool, arguments, meta, progress),
            capabilities=capabilities,
            state=state,
            responses=responses,
        )

    @traced(
        "hatp.call",
        lambda a: {"server": a["server"], "tool": a["tool"]},
        result=answered,
        parent="meta",
    )
    async def answer(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        meta: Any = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Decide, forward (or not), take in the journal object and append the entry.

        ``meta`` is the request's ``_meta`` as the agent sent it. The answer is the tool call's
        result as the agent sees it, plain JSON: the downstream's own result with the token
        stripped and ``_meta["hatp/recorder"]`` added, or the Recorder's pending or refusal.

        A call the policy holds becomes an ask; calling again learns its fate: still pending,
        forwarded once approved, or refused after a denial or the deadline. A call may wait for
        the decision (``recorder/waiting.py``), with ``progress`` told while it waits. A call that
        sends a run key (``_meta["hatp/runKey"]``) goes to that key's run (``recorder/runs.py``).
        """
        self._in_flight += 1
        try:
            section = self.config.recorder
            wait = wait_of(meta, section.wait_seconds, section.max_wait_seconds)
            run = self.sessions.run_for(sent_key(meta), self.clock())
            if isinstance(run, RunKeyRefusal):
                return await self._refuse_run_key(server, tool, arguments, run, _host_meta(meta))
            key = sent_idempotency_key(meta)
            if isinstance(key, KeyRefusal):
                return await self._refuse_key(run, server, tool, arguments, key, _host_meta(meta))
            noting = call_journal.set(partial(self.append_note, run))  # what its server asks the agent
            try:
                answer = await self._answer(
                    server, tool, arguments, _host_meta(meta), run, wait, progress, key
                )
            finally:
                call_journal.reset(noting)
            answer = _with_recorder_meta(answer, self.sessions.state(run).key, wait.said())
        finally:
            self._in_flight -= 1
        ours = answer.get("_meta", {}).get("hatp/recorder", {})
        if ours.get("status") == "pending_approval" and self._has_output_schema(server, tool):
            # A client checks a successful result against the tool's output schema, which the
            # Recorder's "pending" can't meet: it is said as an error (the call was not made).
            answer["isError"] = True
        return answer

    def _has_output_schema(self, server: str, tool: str) -> bool:
        listed = self.downstreams[server].tools.get(tool)
        return listed is not None and listed.output_schema is not None

    async def _answer(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        host: dict[str, Any] | None,
        run: str,
        wait: Wait | None = None,
        progress: Progress | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        checked = check_arguments(arguments, self.config.recorder.max_arguments_bytes)
        if checked.refusal is not None:
            return await self._refuse_arguments(run, server, tool, checked.refusal, host)
        downstream = self.downstreams[server]
        now: datetime = self.clock()
        facts = self._facts(downstream, tool, arguments, now, run)
        retry = None
        if facts.kind != "read" and self.retries.watched(key):
            # A retry gets the first answer (recorder/retries.py): no second write, no new ask.
            retry = CallName(f"{server}/{tool}", call_digest(server, tool, arguments), key)
            found, answered_in = self.retries.find(run, retry, now), run
            before = self.sessions.state(run).continues
            if found is None and before is not None:  # first answered in the closed run this one continues
                found, answered_in = self.retries.find(before, retry, now), before
            if found is not None and found.call != retry.call:
                refusal = KeyRefusal(
                    RetryCode.IDEMPOTENCY_KEY_REUSED, f"this key was sent with another call ({found.entry})"
                )
                return await self._refuse_key(run, server, tool, arguments, refusal, host)
            retried = key is not None or facts.kind != "unknown"
            if found is not None and (retried or self._approved(answered_in, found)):
                return replayed(found, answered_in)
        call: dict[str, Any] = {  # CallRecord's members, written by call_wire (call_body.py)
            "agent": self.config.recorder.agent,
            "principal": self.config.recorder.principal,
            "server": server,
            "tool": tool,
            "arguments": arguments,
            "arguments_digest": checked.digest,
            "declared": facts.kind,
            "host": host,
        }
        earlier = None
        unsettled = self.sessions.state(run).unsettled
        if unsettled:
            # Only a run with asks still open reads its record back; every other call stays O(1).
            self.asks.withdraw_overdue(run, now, self._directory())
            earlier = self._open_ask(run, server, tool, arguments)
        if earlier is not None and earlier.state == "approved":
            claim = self.sessions.keys.claim(run, earlier.entry.id, now)
            if claim is ClaimState.TAKEN:
                earlier = None  # another caller is forwarding it: this call is a new one
            elif claim is ClaimState.IN_DOUBT:
                unsettled.discard(earlier.entry.id)
                return self._in_doubt(run, earlier, call)
            else:
                crash_point("gateway:claimed")
        if earlier is not None:
            unsettled.discard(earlier.entry.id)
            if earlier.state == "pending":
                unsettled.add(earlier.entry.id)
                return await self._held(
                    server, tool, arguments, host, run, earlier.entry.id, wait, progress, key
                )
            if earlier.state != "approved":
                code = "ASK_DENIED" if earlier.state == "denied" else "DEADLINE_EXCEEDED"
                entry = self.asks.settle(run, earlier, "refused", {**call_wire(call), "code": code})
                return _refusal(code, f"the call was not approved ({earlier.state})", entry.id)
            assert earlier.decision is not None
            approved_by = read_own(DecisionBody, earlier.decision).approval.by
            call = {**call, "ask": earlier.entry.id, "decision": {"action": "approved", "by": approved_by}}
            # A person approved it: its amount counts without another look at the caps.
            return await self._forward(run, downstream, facts, call, self.ledger.hold(facts), retry=retry)
        # Deciding and holding the amount is one step, so Recorders racing for a cap take turns.
        decision, held, recorded = self._decide(facts)
        snapshot = None
        compensation = self._compensation(downstream, tool)
        if compensation is not None and decision.action == "allow":
            try:  # the host undoes this tool: no snapshot, no autonomous call (host_undo.py)
                snapshot = await take_snapshot(compensation, arguments, downstream.call)
            except HostReadFailed as error:
                self.ledger.settle(held, moved=False)
                decision, held, recorded = snapshot_asks(decision, error), None, None
        call = {**call, "decision": recorded or decision.wire()}
        if decision.action != "allow":
            autonomy = self.policy.autonomy
            within = autonomy.decide_within_seconds
            # What the server says the call would do, for the person who decides (recorder/previews.py).
            preview = await effect_preview(downstream, tool, arguments)
            entry = self.asks.open(
                run,
                call_wire(call) if preview is None else {**call_wire(call), "preview": preview},
                now=now,
                approver=autonomy.approver or self.policy.undo_authority or "unassigned",
                within=None if within is None else timedelta(seconds=within),
            )
            unsettled.add(entry.id)
            return await self._held(server, tool, arguments, host, run, entry.id, wait, progress, key)
        return await self._forward(run, downstream, facts, call, held, snapshot, retry)

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
        return _refusal("CALL_IN_DOUBT", why, entry.id)

    @traced("hatp.held", lambda a: {"run": a["run"], "ask": a["ask"]})
    async def _held(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        host: dict[str, Any] | None,
        run: str,
        ask: str,
        wait: Wait | None,
        progress: Progress | None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Answer a call waiting for its ask: pending, or (within the wait) what the decision made of it."""
        if wait is None or wait.seconds <= 0:
            return _pending(run, ask)
        state = await wait_for_decision(lambda: self._ask_state(run, ask), wait, progress, ask)
        if state == "pending":
            return _pending(run, ask)
        return await self._answer(server, tool, arguments, host, run, key=key)  # as if called again: no wait

    def _ask_state(self, run: str, ask: str) -> str:
        return next((a.state for a in self.asks.all(run) if a.entry.id == ask), "pending")

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
        return _refusal(str(refusal.code), refusal.message, entry.id)

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
        return _refusal(str(refusal.code), refusal.message, entry.id)

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
        return _refusal(refusal.code, refusal.message(), entry.id)

    async def append_call(self, run: str, body: dict[str, Any]) -> Entry:
        """Append a ``call`` entry the Recorder made itself (a resource read), linked like any call."""
        links = self.sessions.state(run).links
        body["links"] = links.links(body)
        entry = await self._append(run, "call", body)
        links.add(entry.id, body)
        return entry

    async def append_note(self, run: str, body: dict[str, Any]) -> Entry:
        """Append a ``note`` entry (an agent tool's call: no step of the run)."""
        return await self._append(run, "note", body)

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
                "host": _host_meta(_request_meta()),
            }
        )
        entry = await self._append(run, "refused", body.wire())
        return _tool_result(_refusal("UNKNOWN_TOOL", f"the Recorder publishes no tool {name!r}", entry.id))

    @traced(
        "hatp.append",
        lambda a: {"run": a["run"], "kind": a["kind"]},
        result=lambda entry: {"entry": entry.id},
    )
    async def _append(
        self,
        run: str,
        kind: str,
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

    async def _forward(
        self,
        run: str,
        downstream: Downstream,
        facts: CallFacts,
        call: dict[str, Any],
        held: Hold | None,
        snapshot: dict[str, Any] | None = None,
        retry: CallName | None = None,
    ) -> dict[str, Any]:
        """Forward the call and journal it; with ``retry`` (the call's name), keep its answer for a retry."""
        tool, arguments = call["tool"], call["arguments"]
        compensation = self._compensation(downstream, tool)
        failed = None
        if compensation is not None and snapshot is None:  # approved by a person: snapshot now
            try:
                snapshot = await take_snapshot(compensation, arguments, downstream.call)
            except HostReadFailed as error:
                failed = f"the host's snapshot failed, the call ran on its approval: {error}"
        if "ask" in call:
            # Said before it is sent: a claim whose holder died after this is in doubt, never resent.
            if not self.sessions.keys.claim_sent(run, call["ask"], self.clock()):
                self.ledger.settle(held, moved=False)
                why = "another Recorder took this approved call over: it was not sent from here"
                return _refusal("ASK_CLAIMED_ELSEWHERE", why, call["ask"])
            crash_point("gateway:sent")
        bound = new_call(run)  # echoed in the receipt: it can't be moved to another call or run
        try:
            result = await downstream.call_wire(tool, arguments, bound)
        except DownstreamError as error:
            self.ledger.settle(held, moved=False)  # a failed call does not count
            call = {**call, "outcome": outcome("failed", str(error))}
            entry = await self._append_linked(run, call)
            return _refusal("DOWNSTREAM_FAILED", str(error), entry.id)
        is_error = bool(result.get("isError"))
        members, tokens, astray = result_members(
            result,
            lambda meta: take_in(
                meta,
                tool=tool,
                arguments=arguments,
                server_keys=downstream.keys,
                declared_kind=facts.kind,
                arguments_digest=call["arguments_digest"],
                call=bound,
            ),
            downstream.name,
            self.config.recorder.max_journal_bytes,
        )
        host_undo = None
        if failed is not None:
            host_undo = HostUndoRecord(failed=failed).wire()
        elif compensation is not None and snapshot is not None:
            host_undo = await host_member(
                compensation,
                server=downstream.name,
                tool=tool,
                arguments=arguments,
                result=result,
                snapshot=snapshot,
                call=downstream.call,
                key=self.store.key,
                now=self.clock(),
            )
        call = {**call, **members, "outcome": outcome("error" if is_error else "ok"), "host_undo": host_undo}
        self.ledger.settle(held, moved=not is_error)
        refusal = f"{downstream.name} answered {tool} with {astray}" if astray is not None else None
        kept = None
        if retry is not None:
            # A result refused whole is kept as its refusal: a token out of its place reaches no retry.
            first = _refusal(BAD_JOURNAL, refusal, "") if refusal is not None else _for_agent(result, run, "")
            kept = self.retries.keep(unsent(first), retry, self.clock())
        entry = await self._append_linked(run, call, tokens, kept)
        crash_point("gateway:answered")  # journaled, its answer kept: the agent has not got it yet
        if refusal is not None:
            return _refusal(BAD_JOURNAL, refusal, entry.id)
        return _for_agent(result, run, entry.id)

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
        body = call_wire(call)
        body = call_wire({**call, "links": links.links(body)})
        entry = await self._append(run, "call", body, tokens, answer)
        links.add(entry.id, body)
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


class ForwardTool(Tool):
    """An agent-facing tool that forwards to one downstream tool through the Recorder."""

    _recorder: Recorder | None = PrivateAttr(default=None)
    _server: str = PrivateAttr(default="")
    _tool: str = PrivateAttr(default="")
    _published: McpTool | None = PrivateAttr(default=None)

    @classmethod
    def for_downstream(
        cls, recorder: Recorder, server: str, tool: Any, annotations: ToolAnnotations
    ) -> ForwardTool:
        """Mirror ``tool`` of ``server`` as ``{server}_{tool}`` with its schema and meta, and the
        host's ``annotations`` (``host_hints.py``), not the server's."""
        forward = cls(
            name=f"{server}_{tool.name}",
            title=tool.title,
            description=tool.description,
            parameters=tool.input_schema,
            annotations=annotations,
            meta=tool.meta,
        )
        forward._recorder, forward._server, forward._tool = recorder, server, tool.name
        # The Recorder answers every call itself and offers no MCP tasks: no ``execution`` (absent is
        # "forbidden"), whatever the server offers; a call is made as a plain call (docs/recorder.md).
        forward._published = tool.model_copy(update={"annotations": annotations, "execution": None})
        return forward

    def to_mcp_tool(self, **overrides: Any) -> McpTool:
        """The tool as its server listed it (title, output schema, ``_meta``...), but for its name
        and the hints, which are the host's."""
        assert self._published is not None
        meta = passthrough.published_meta(self._published.meta)
        return self._published.model_copy(update={"name": self.name, "meta": meta})

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Forward through the Recorder."""
        assert self._recorder is not None
        return await self._recorder.handle(self._server, self._tool, arguments)


def _request_meta() -> Any:
    """The ``_meta`` of the request being handled through the mcp library, if any."""
    try:
        request = get_context().request_context
    except RuntimeError:
        return None
    return request.meta if request is not None else None


def _library_rounds() -> tuple[Any, Any, Any] | None:
    """(client capabilities, ``requestState``, ``inputResponses``) of the 2026-era request being
    handled through the mcp library; None for a handshake-era one (or none at all)."""
    try:
        context = get_context()
    except RuntimeError:
        return None
    request = context.request_context
    if request is None or request.session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    capabilities = request.session.client_capabilities
    responses = context.input_responses
    dumped = (
        None
        if responses is None
        else {k: v.model_dump(mode="json", by_alias=True, exclude_none=True) for k, v in responses.items()}
    )
    return capabilities, context.request_state, dumped


def _library_progress() -> Progress | None:
    """How to send progress for the request being handled through the mcp library, if any."""
    try:
        return get_context().report_progress
    except RuntimeError:
        return None


def _with_recorder_meta(
    answer: dict[str, Any], key: str | None, wait: dict[str, Any] | None
) -> dict[str, Any]:
    """The answer with the run key to send back, and what became of an asked wait, in its
    ``_meta["hatp/recorder"]`` (a copy: the Recorder's own answers share it with structuredContent)."""
    meta = answer.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("hatp/recorder"), dict):
        return answer
    recorder = dict(meta["hatp/recorder"])
    if key is not None:
        recorder["runKey"] = key
    if wait is not None:
        recorder["wait"] = wait
    return {**answer, "_meta": {**meta, "hatp/recorder": recorder}}


def _host_meta(meta: Any) -> dict[str, Any] | None:
    """What the agent's host said about this call (``_meta["hatp/host"]``, e.g. ``{"uses": ["e2"]}``).

    It is agent-sent, so what the record can't hold is replaced by ``{"rejected": why}``.
    """
    host = meta.get(HOST_META_KEY) if isinstance(meta, dict) else None
    if host is None:
        return None
    problem = "not a JSON object" if not isinstance(host, dict) else bounded(host)
    if problem is None and len(canonical_bytes(host)) > HOST_META_BYTES:
        problem = f"more than {HOST_META_BYTES} bytes"
    return host if problem is None else {"rejected": f"not kept: {problem}"}


def result_members(
    result: dict[str, Any], intake_of: Callable[[Any], Intake], server: str, limit: int
) -> tuple[dict[str, Any], list[Kept], str | None]:
    """A result's ``intake`` and ``journal`` members, the token to keep, and where the result put
    a journal object or token astray (None: nowhere; else the result is refused ``BAD_JOURNAL``).

    ``intake_of`` takes in the result's ``_meta``. The tool acted either way, so the call is
    journaled; a result refused whole keeps nothing of its object, so a token found out of its
    place goes nowhere: not the record, not the agent.
    """
    astray = misplaced(result)
    if astray is not None:
        return refused_journal(astray), [], astray
    members, tokens = journal_members(intake_of(result.get("_meta")), server, limit)
    return members, tokens, None


def journal_members(intake: Intake, server: str, limit: int) -> tuple[dict[str, Any], list[Kept]]:
    """The ``intake`` and ``journal`` members of a call entry, and the compensation token to keep.

    A verified object is kept whole (its token replaced by the digest); any other as received when
    it is plain JSON; one over ``limit`` canonical bytes by its size and digest only.
    """
    journal = intake.raw if intake.status == "verified" else _kept(intake.raw)
    oversize = _oversize(journal, limit)
    if oversize is not None:
        # The call happened, so it is journaled: as unknown, with the object's size and digest.
        intake, journal = Intake("unresolved", "unknown", oversize["rejected"]), oversize
    kept, tokens = redact(server, journal)
    return {"intake": intake.wire(), "journal": kept}, tokens


def _oversize(journal: Any, limit: int) -> dict[str, Any] | None:
    """What an entry keeps of a journal object (bounded at intake) over ``limit`` canonical bytes."""
    if _surely_within(journal, limit):
        return None
    data = canonical_bytes(journal)
    if len(data) <= limit:
        return None
    return {
        "rejected": f"not kept: {len(data)} bytes, more than max_journal_bytes ({limit})",
        "bytes": len(data),
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
    }


_ascii_json = json.JSONEncoder(separators=(",", ":")).encode
"""The C encoder's ASCII form: never shorter than the canonical form but for a float's exponent."""

EXPONENT_SLACK = 20
"""Most bytes a float's canonical form adds to Python's (``1e+20``: ``100000000000000000000``)."""


def _surely_within(journal: Any, limit: int) -> bool:
    """Whether ``journal``'s canonical form is surely at most ``limit`` bytes, told without writing it.

    Its ASCII JSON is never shorter (a non-ASCII character is six bytes there, at most four in
    UTF-8; the rest is written alike), but for a float in exponent form, which canonical JSON may
    write longer: every "e" gets ``EXPONENT_SLACK`` bytes. The C encoder costs a fraction of
    canonical JSON's walk; only a journal near or over the limit is measured exactly.
    """
    try:
        text = _ascii_json(journal)
    except (TypeError, ValueError, RecursionError):
        return False
    return len(text) + EXPONENT_SLACK * text.count("e") <= limit


def _kept(raw: Any) -> Any:
    """An unresolved object is kept as received when it is plain JSON, else summarized."""
    return raw if bounded(raw) is None else {"rejected": "not kept: too large, too deep or not JSON"}


def _strip_token(meta: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(meta.get(META_KEY), dict):
        return meta
    journal = {k: v for k, v in meta[META_KEY].items() if k != "compensationToken"}
    return {**meta, META_KEY: journal}


def _for_agent(result: dict[str, Any], run: str, entry_id: str) -> dict[str, Any]:
    """The downstream's result as it came, but for its token and with where it was recorded."""
    meta = result.get("_meta")
    kept = _strip_token(meta) if isinstance(meta, dict) else {}
    kept = {**kept, "hatp/recorder": {"run": run, "entry": entry_id}}
    if "_meta" not in result:
        return {**result, "_meta": kept}
    return {key: kept if key == "_meta" else value for key, value in result.items()}


def _tool_result(answer: dict[str, Any]) -> ToolResult:
    """An answer as the mcp library serves it."""
    result = CallToolResult.model_validate(answer)
    return ToolResult(
        content=list(result.content),
        structured_content=result.structured_content,
        meta=result.meta,
        is_error=bool(result.is_error),
    )


def _answer(text: str, body: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    """One of the Recorder's own answers, as plain JSON."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": body,
        "_meta": {"hatp/recorder": body},
        "isError": is_error,
    }


def _pending(run: str, entry_id: str) -> dict[str, Any]:
    """Tell the agent the call waits for a person. The reasons stay in the record: the policy
    (caps, windows, who may approve) is the organisation's and never shown to the agent."""
    body = {
        "status": "pending_approval",
        "run": run,
        "ask": entry_id,
        "message": "This call needs a person's approval; it has not been made. Call again later.",
    }
    sentence = (
        f"Waiting for approval ({entry_id}): this call needs a person's approval and has not been made. "
        "Call again with the same arguments once approved (a denied or expired ask is refused then)."
    )
    return _answer(said(sentence, body), body, is_error=False)


def _refusal(code: str, message: str, entry_id: str) -> dict[str, Any]:
    body = {"code": code, "message": message, "entry": entry_id}
    return _answer(f"{code}: {message}", body, is_error=True)
