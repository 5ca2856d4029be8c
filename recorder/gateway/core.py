"""The Recorder's gateway: forwards an agent's calls to tool servers and journals each one.

The agent connects to the Recorder like to any MCP server and sees every downstream tool as
``{server}_{tool}``. The binding tools are never listed and never forwarded; compensation
tokens are kept in the Run Record and stripped from what the agent receives.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp.types import InputRequiredResult

from hatp_journal._shared.crashpoints import crash_point
from hatp_journal.recorder.changes.host_undo import (
    HostReadFailed,
    host_member,
    snapshot_asks,
    take_snapshot,
)
from hatp_journal.recorder.gateway import agent_tools, passthrough
from hatp_journal.recorder.gateway.arguments import check_arguments
from hatp_journal.recorder.gateway.call_body import call_wire, outcome
from hatp_journal.recorder.gateway.call_facts import tool_facts
from hatp_journal.recorder.gateway.downstream import Downstream, DownstreamError
from hatp_journal.recorder.gateway.forward_tool import (
    ForwardTool,
    library_progress,
    library_rounds,
    request_meta,
)
from hatp_journal.recorder.gateway.host_hints import host_annotations
from hatp_journal.recorder.gateway.previews import effect_preview
from hatp_journal.recorder.gateway.recorder_base import RecorderBase
from hatp_journal.recorder.gateway.relay import call_journal
from hatp_journal.recorder.gateway.replies import (
    for_agent,
    host_meta,
    pending_answer,
    refused_answer,
    result_members,
    tool_result,
    with_recorder_meta,
)
from hatp_journal.recorder.gateway.retries import (
    CallName,
    KeyRefusal,
    RetryCode,
    replayed,
    sent_idempotency_key,
    unsent,
)
from hatp_journal.recorder.intake.journal_objects import take_in
from hatp_journal.recorder.intake.tokens import (
    BAD_JOURNAL,
    new_call,
)
from hatp_journal.recorder.policy import CallFacts
from hatp_journal.recorder.policy.classify import class_of_every_call
from hatp_journal.recorder.policy.registry_compensation import Compensation
from hatp_journal.recorder.policy.stored_ledger import Hold
from hatp_journal.recorder.record.entry_bodies import DecisionBody, read_own
from hatp_journal.recorder.record.written_bodies import HostUndoRecord
from hatp_journal.recorder.runs.asks import call_digest
from hatp_journal.recorder.runs.keys import ClaimState, RunKeyRefusal, sent_key
from hatp_journal.recorder.runs.waiting import Progress, Wait, wait_for_decision, wait_of
from hatp_journal.recorder.tracing import answered, traced
from hatp_journal.recorder.witness.sender import WitnessSender


class Recorder(RecorderBase):
    """Journals every call of one agent session (one run) and applies the autonomy policy."""

    async def start(self, stack: AsyncExitStack, spawned: Mapping[str, Any] | None = None) -> FastMCP:
        """Connect every downstream, open the run and publish the agent-facing tools.

        ``spawned``: server processes already started, by name (``recorder/cli/boot.py``).
        """
        agent_tools.publish(self)  # first: a server name that clashes with them is refused before it starts
        if self.config.witnesses:  # every signed head goes to the witnesses (recorder/witness/sender.py)
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
            meta, progress = request_meta(), library_progress()
            rounds = library_rounds()
            if rounds is None:
                return tool_result(await self.answer(server, tool, arguments, meta, progress))
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
            return tool_result(answer)
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
        ``responses``) carries the answers on (``recorder/gateway/relay_rounds.py``)."""

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
        the decision (``recorder/runs/waiting.py``), with ``progress`` told while it waits. A call that
        sends a run key (``_meta["hatp/runKey"]``) goes to that key's run (``recorder/runs/keys.py``).
        """
        self._in_flight += 1
        try:
            section = self.config.recorder
            wait = wait_of(meta, section.wait_seconds, section.max_wait_seconds)
            run = self.sessions.run_for(sent_key(meta), self.clock())
            if isinstance(run, RunKeyRefusal):
                return await self._refuse_run_key(server, tool, arguments, run, host_meta(meta))
            key = sent_idempotency_key(meta)
            if isinstance(key, KeyRefusal):
                return await self._refuse_key(run, server, tool, arguments, key, host_meta(meta))
            noting = call_journal.set(partial(self.append_note, run))  # what its server asks the agent
            try:
                answer = await self._answer(
                    server, tool, arguments, host_meta(meta), run, wait, progress, key
                )
            finally:
                call_journal.reset(noting)
            answer = with_recorder_meta(answer, self.sessions.state(run).key, wait.said())
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
            # A retry gets the first answer (recorder/gateway/retries.py): no second write, no new ask.
            retry = CallName(f"{server}/{tool}", call_digest(server, tool, arguments), key)
            first = await self._first_answer(run, facts, retry, (arguments, host), now)
            if first is not None:
                return first
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
                return refused_answer(code, f"the call was not approved ({earlier.state})", entry.id)
            assert earlier.decision is not None
            approved_by = read_own(DecisionBody, earlier.decision).approval.by
            call = {**call, "ask": earlier.entry.id, "decision": {"action": "approved", "by": approved_by}}
            # A person approved it: its amount counts without another look at the caps.
            return await self._forward(run, downstream, facts, call, self.ledger.hold(facts), retry=retry)
        return await self._decide_new(run, downstream, facts, call, (host, wait, progress, key), (now, retry))

    async def _first_answer(
        self,
        run: str,
        facts: CallFacts,
        retry: CallName,
        sent: tuple[dict[str, Any], dict[str, Any] | None],
        now: datetime,
    ) -> dict[str, Any] | None:
        """The first answer to a call sent again (None: it is not a retry), or a refusal of a key
        sent with another call (``sent``: its arguments and the host's meta). Looked up in this run,
        then in the closed run it continues."""
        (arguments, host), server, tool = sent, facts.server, facts.tool
        found, answered_in = self.retries.find(run, retry, now), run
        before = self.sessions.state(run).continues
        if found is None and before is not None:  # first answered in the closed run this one continues
            found, answered_in = self.retries.find(before, retry, now), before
        if found is not None and found.call != retry.call:
            refusal = KeyRefusal(
                RetryCode.IDEMPOTENCY_KEY_REUSED, f"this key was sent with another call ({found.entry})"
            )
            return await self._refuse_key(run, server, tool, arguments, refusal, host)
        retried = retry.key is not None or facts.kind != "unknown"
        if found is not None and (retried or self._approved(answered_in, found)):
            return replayed(found, answered_in)
        return None

    async def _decide_new(
        self,
        run: str,
        downstream: Downstream,
        facts: CallFacts,
        call: dict[str, Any],
        asked: tuple[dict[str, Any] | None, Wait | None, Progress | None, str | None],
        when: tuple[datetime, CallName | None],
    ) -> dict[str, Any]:
        """Decide a new call by the policy: forward it, or open its ask and hold it
        (``asked``: the host's meta, the wait, progress and the idempotency key of the call;
        ``when``: now, and the call's name for a retry)."""
        host, wait, progress, key = asked
        now, retry = when
        server, tool, arguments = call["server"], call["tool"], call["arguments"]
        unsettled = self.sessions.state(run).unsettled
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
            # What the server says the call would do, for the person who decides
            # (recorder/gateway/previews.py).
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
            return pending_answer(run, ask)
        state = await wait_for_decision(lambda: self._ask_state(run, ask), wait, progress, ask)
        if state == "pending":
            return pending_answer(run, ask)
        return await self._answer(server, tool, arguments, host, run, key=key)  # as if called again: no wait

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
                return refused_answer("ASK_CLAIMED_ELSEWHERE", why, call["ask"])
            crash_point("gateway:sent")
        bound = new_call(run)  # echoed in the receipt: it can't be moved to another call or run
        try:
            result = await downstream.call_wire(tool, arguments, bound)
        except DownstreamError as error:
            self.ledger.settle(held, moved=False)  # a failed call does not count
            call = {**call, "outcome": outcome("failed", str(error))}
            entry = await self._append_linked(run, call)
            return refused_answer("DOWNSTREAM_FAILED", str(error), entry.id)
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
        host_undo = await self._host_undo(downstream, call, result, compensation, (snapshot, failed))
        call = {**call, **members, "outcome": outcome("error" if is_error else "ok"), "host_undo": host_undo}
        self.ledger.settle(held, moved=not is_error)
        refusal = f"{downstream.name} answered {tool} with {astray}" if astray is not None else None
        kept = None
        if retry is not None:
            # A result refused whole is kept as its refusal: a token out of its place reaches no retry.
            first = (
                refused_answer(BAD_JOURNAL, refusal, "")
                if refusal is not None
                else for_agent(result, run, "")
            )
            kept = self.retries.keep(unsent(first), retry, self.clock())
        entry = await self._append_linked(run, call, tokens, kept)
        crash_point("gateway:answered")  # journaled, its answer kept: the agent has not got it yet
        if refusal is not None:
            return refused_answer(BAD_JOURNAL, refusal, entry.id)
        return for_agent(result, run, entry.id)

    async def _host_undo(
        self,
        downstream: Downstream,
        call: dict[str, Any],
        result: dict[str, Any],
        compensation: Compensation | None,
        taken: tuple[dict[str, Any] | None, str | None],
    ) -> dict[str, Any] | None:
        """A call entry's ``hostUndo`` member: the host's snapshot and inverse call, signed, or why
        the snapshot failed (``taken``: the snapshot, or why it failed); None for no host undo."""
        snapshot, failed = taken
        if failed is not None:
            return HostUndoRecord(failed=failed).wire()
        if compensation is None or snapshot is None:
            return None
        return await host_member(
            compensation,
            server=downstream.name,
            tool=call["tool"],
            arguments=call["arguments"],
            result=result,
            snapshot=snapshot,
            call=downstream.call,
            key=self.store.key,
            now=self.clock(),
        )
