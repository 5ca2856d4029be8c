"""What the entries of a Run Record say, checked against the signatures they carry.

The chain proves the Recorder wrote an entry; the signatures inside prove who else vouched for
it. This module checks every one of them, entry by entry, keeping only what later entries refer
to (a call's server and token digest, an ask's call digest, a plan's digest and conflicts), so
that a record of any length is checked in one pass with little memory:

- ``call`` and ``remedy``: the tool server's call receipt (``RECEIPT_INVALID``);
- ``plan``: its digest (``PLAN_DIGEST_MISMATCH``) and every check answer (``CHECK_RECEIPT_INVALID``);
- ``undo-outcome`` and ``reversal``: every undo answer (``UNDO_RECEIPT_INVALID``);
- ``link`` confirmed by a person: their signature, against the directory of that moment;
- ``decision``: the person's signature (``APPROVAL_SIGNATURE_INVALID``) over exactly the ask or plan
  it names (``APPROVAL_TARGET_MISMATCH``), their role in the directory of that moment
  (``APPROVER_NOT_AUTHORIZED``, ``DIRECTORY_MISSING``) and each override (``OVERRIDE_INVALID``);
- every entry: no compensation token (``TOKEN_IN_RECORD``) and a known kind (``UNKNOWN_KIND``).

Nothing here raises on a body of the wrong shape: it becomes ``BAD_BODY`` naming the entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hatp_journal.recorder.record.body_parts import (
    BadBody,
    _Ask,
    _Call,
    _call_digest,
    _holds_token,
    _list,
    _mapping,
    _optional_str,
    _override_problem,
    _person_key,
    _Plan,
    _prepared,
    _safely,
    _safely_digest,
    _signed,
    _signed_task,
    _Target,
    _why,
    parse_directory,
)
from hatp_journal.recorder.record.kinds import KNOWN_KINDS
from hatp_journal.recorder.record.models import Entry
from hatp_journal.recorder.record.report import Check, Findings
from hatp_journal.recorder.record.signature_workers import POOL_AFTER, SignatureChecks, Then
from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.toolkit.signing import (
    VerifyKey,
    answer_task,
    call_task,
    digest_call_task,
    strict_receipt,
    verify,
)

if TYPE_CHECKING:
    # Imported when used: the directory module reaches the policy package, which reaches back here.
    from hatp_journal.recorder.directory import Directory, Person

__all__ = ["KNOWN_KINDS", "BadBody", "BodyChecks", "parse_directory"]


@dataclass
class BodyChecks:
    """Checks each entry's body in order; ``run`` is the run id, keys are the verifier's.

    ``directories`` are the directories decisions may be checked against (digest → directory).
    When the verifier pinned its own, ``pinned_directory`` is the one a decision naming any other
    digest is checked against (and that decision is ``DIRECTORY_NOT_PINNED``): a pin is never
    replaced by what the file says.

    The signatures of calls, undo answers and decisions are checked by :attr:`signatures`, on
    ``workers`` other processes once more than ``pool_after`` were seen (``signature_workers.py``):
    what a verdict leads to is then done when it comes, and found where it would have been.
    """

    run: str
    server_keys: Mapping[str, Mapping[str, VerifyKey]]
    directories: Mapping[str, Directory | None]
    found: Findings
    receipts_checked: int = 0
    recorder_keys: Mapping[str, VerifyKey] = field(default_factory=dict)
    pinned_directory: Directory | None = None
    workers: int | None = 0
    pool_after: int = POOL_AFTER
    signatures: SignatureChecks = field(init=False)
    _calls: dict[str, _Call] = field(default_factory=dict)
    _asks: dict[str, _Ask] = field(default_factory=dict)
    _plans: dict[str, _Plan] = field(default_factory=dict)
    _signed_tokens: set[str] = field(default_factory=set)
    _digested: tuple[Any, str | None] = (None, None)  # the last arguments digested, and their digest
    _bound_calls: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.signatures = SignatureChecks(self.workers, self.pool_after, hold=self._held)

    def finish(self) -> None:
        """Act on every verdict still to come, and put what they found in its place."""
        self.signatures.finish()
        self.found.settle()

    def _held(self, then: Then) -> Then:
        """``then`` for a verdict that comes later: what it finds goes where it would have been."""
        place = self.found.hold()

        def later(valid: bool) -> None:
            outer, self.found = self.found, Findings()
            try:
                then(valid)
            finally:
                found, self.found = self.found, outer
            outer.put(place, found)

        return later

    def _verdict(self, entry: Entry, then: Then) -> Then:
        """``then``, with a body found of the wrong shape on the way reported as :meth:`check` does."""

        def checked(valid: bool) -> None:
            try:
                then(valid)
            except BadBody as error:
                self.found.add(Check.BAD_BODY, entry.id, f"{entry.kind} body: {error}")

        return checked

    def check(self, entry: Entry, stored: bytes | None = None) -> None:
        """Check one entry (entries come in chain order); ``stored``: its bytes as written, if known."""
        if entry.kind not in KNOWN_KINDS:
            self.found.add(Check.UNKNOWN_KIND, entry.id, f"kind {entry.kind!r} is not one a Recorder writes")
        if _holds_token(entry, stored):
            self.found.add(Check.TOKEN_IN_RECORD, entry.id, "a compensation token is written in the record")
        check = _BY_KIND.get(entry.kind)
        try:
            if entry.kind in _CALL_FIELDS:
                self._call_digests(entry)
            if check is not None:
                check(self, entry)
        except BadBody as error:
            self.found.add(Check.BAD_BODY, entry.id, f"{entry.kind} body: {error}")

    # -- digests and times ------------------------------------------------------------

    def _call_digests(self, entry: Entry) -> None:
        """``argumentsDigest`` is the digest of the arguments kept beside it; a call or refusal made
        after an ask is exactly the call asked about (the digest of ``{server, tool, arguments}``
        is the ask's ``callDigest``)."""
        body = entry.body
        arguments = body.get("arguments")
        if "arguments" in body and not isinstance(arguments, Mapping):
            raise BadBody("arguments is not an object")
        stated = body.get("argumentsDigest")
        if arguments is not None and stated is not None and self._arguments_digest(arguments) != stated:
            self.found.add(
                Check.CALL_DIGEST_MISMATCH, entry.id, "argumentsDigest is not the digest of the arguments"
            )
        asked = body.get("ask")
        if entry.kind == "ask" or asked is None or arguments is None:
            return
        ask = self._asks.get(asked) if isinstance(asked, str) else None
        if ask is None:
            self.found.add(Check.CALL_DIGEST_MISMATCH, entry.id, f"ask {asked!r} is not an earlier ask")
        elif _call_digest(body) != ask.call_digest:
            self.found.add(Check.CALL_DIGEST_MISMATCH, entry.id, f"not the call {asked} asked about")

    def _arguments_digest(self, arguments: Any) -> str | None:
        """The digest of a call's arguments, kept for its receipt's check (which signs it)."""
        digest = _safely_digest(arguments)
        self._digested = (arguments, digest)
        return digest

    def _time(self, entry: Entry, what: str, value: Any, *, optional: bool = False) -> None:
        """A time in a body, written as every time in a record is (``BAD_TIME`` otherwise)."""
        if value is None and optional:
            return
        if not is_wire_time(value):
            self.found.add(Check.BAD_TIME, entry.id, f"{what} {value!r}")

    def _receipt_time(self, entry: Entry, what: str, receipt: Any) -> None:
        """The ``issuedAt`` of a receipt that is one (its other members are the signature's business)."""
        if isinstance(receipt, Mapping) and "issuedAt" in receipt:
            self._time(entry, f"{what} issuedAt", receipt["issuedAt"])

    # -- calls ----------------------------------------------------------------

    def _call(self, entry: Entry) -> None:
        body = entry.body
        server = _optional_str(body, "server")
        host = body.get("hostUndo")
        if isinstance(host, Mapping) and "receipt" in host:
            self._host_call(entry, server, host)
            return
        journal = body.get("journal")
        digest = journal.get("compensationTokenDigest") if isinstance(journal, Mapping) else None
        self._calls[entry.id] = _Call(server, digest if isinstance(digest, str) else None)
        tool = body.get("tool")
        # An error result carries a stable code and no receipt: there is nothing of the server's to verify.
        if not isinstance(journal, Mapping) or set(journal) == {"error"} or not isinstance(tool, str):
            return
        if "rejected" in journal and len(journal) == 1:
            return  # the Recorder kept no object (too large or not JSON): it said so at intake
        keys = self._keys(server)
        arguments, arguments_digest = body.get("arguments"), body.get("argumentsDigest")
        digest_of_arguments = self._digested[1] if self._digested[0] is arguments else None
        if isinstance(arguments, Mapping) and digest_of_arguments is not None:
            # What call_task would work out again: the digest of these very arguments, just taken.
            task = _prepared(lambda: digest_call_task(journal, tool, digest_of_arguments, keys))
        elif isinstance(arguments, Mapping):
            task = _prepared(lambda: call_task(journal, tool, arguments, keys))
        elif isinstance(arguments_digest, str):
            task = _prepared(lambda: digest_call_task(journal, tool, arguments_digest, keys))
        else:
            raise BadBody("a call with a journal object has neither arguments nor argumentsDigest")
        self.receipts_checked += 1
        receipt = journal.get("receipt")
        self._receipt_time(entry, "call receipt", receipt)
        intake = body.get("intake")
        unresolved = isinstance(intake, Mapping) and intake.get("status") == "unresolved"

        def then(valid: bool) -> None:
            # A failure in a call the Recorder kept as unresolved at intake was reported then:
            # flagged. (self.found is read now: a late verdict's findings go to their held place.)
            report = self.found.flag if unresolved else self.found.add
            if valid:
                self._in_its_place(entry, journal, digest if isinstance(digest, str) else None, report)
            else:
                report(Check.RECEIPT_INVALID, entry.id, f"call receipt of server {server!r} {_why(keys)}")

        self.signatures.check(task, self._verdict(entry, then))

    def _in_its_place(
        self,
        entry: Entry,
        journal: Mapping[str, Any],
        token_digest: str | None,
        report: Callable[[Check, str | None, str], None],
    ) -> None:
        """A valid call receipt is for one call only. One that signs a call binding (the ``call``
        the Recorder sent and the server echoed) is of this run (``RECEIPT_MISPLACED``) and its
        id is in no earlier receipt; one that signs a compensation token signs a token no earlier
        receipt signs (tokens are minted once per call) — ``RECEIPT_REPLAYED``. (A receipt with
        neither can repeat honestly: the same read made twice in one second is signed alike. Its
        time is the server's clock, never compared with the Recorder's.)"""
        bound = journal.get("call")
        if bound is not None:
            run = bound.get("run") if isinstance(bound, Mapping) else None
            call_id = bound.get("id") if isinstance(bound, Mapping) else None
            if run != self.run or not isinstance(call_id, str):
                report(Check.RECEIPT_MISPLACED, entry.id, f"a call receipt bound to a call of run {run!r}")
            elif call_id in self._bound_calls:
                report(Check.RECEIPT_REPLAYED, entry.id, "a call receipt bound to a call already journaled")
            else:
                self._bound_calls.add(call_id)
        if token_digest is None:
            return
        if token_digest in self._signed_tokens:
            report(
                Check.RECEIPT_REPLAYED,
                entry.id,
                "a call receipt for a token already signed in an earlier entry",
            )
        self._signed_tokens.add(token_digest)

    def _host_call(self, entry: Entry, server: str | None, host: Mapping[str, Any]) -> None:
        """A call the host undoes (recorder/changes/host_undo.py): its ``hostUndo`` member is signed by the
        Recorder, and so are the undo answers about it, named by the member's digest."""
        self._calls[entry.id] = _Call(server, _safely_digest(dict(host)), host=True)
        signed = {"hostUndo": {k: v for k, v in host.items() if k != "receipt"}}
        self.receipts_checked += 1
        self._receipt_time(entry, "hostUndo receipt", host.get("receipt"))
        receipt = strict_receipt(host.get("receipt"))
        if receipt is None or not _safely(lambda: verify(receipt, signed, self.recorder_keys)):
            self.found.add(
                Check.RECEIPT_INVALID, entry.id, "the host's compensation is not signed by the Recorder"
            )

    def _ask(self, entry: Entry) -> None:
        body = entry.body
        stated = body.get("callDigest")
        if not isinstance(body.get("arguments"), Mapping):
            raise BadBody("an ask that keeps no arguments")
        if _call_digest(body) != stated:
            self.found.add(
                Check.CALL_DIGEST_MISMATCH,
                entry.id,
                "callDigest is not the digest of {server, tool, arguments}",
            )
        self._time(entry, "decideBy", body.get("decideBy"))
        self._asks[entry.id] = _Ask(stated, body.get("approver"))

    # -- plans and undo answers ---------------------------------------------------

    def _plan(self, entry: Entry) -> None:
        body = entry.body
        plan = _mapping(body, "plan")
        conflicts = {}
        for conflict in _list(plan, "conflicts"):
            if not isinstance(conflict, Mapping) or not isinstance(conflict.get("entry"), str):
                raise BadBody("a conflict that names no entry")
            conflicts[conflict["entry"]] = conflict.get("versionFound")
        self._plans[entry.id] = _Plan(body.get("planDigest"), body.get("approver"), conflicts)
        self._time(entry, "decideBy", body.get("decideBy"))
        if _safely_digest(plan) != body.get("planDigest"):
            self.found.add(Check.PLAN_DIGEST_MISMATCH, entry.id, "the plan does not hash to its planDigest")
        for step, answer in _mapping(body, "checks").items():
            self._answer(entry, step, answer, Check.CHECK_RECEIPT_INVALID, "check answer")

    def _outcome(self, entry: Entry) -> None:
        body = entry.body
        step = body.get("step")
        if not isinstance(step, str):
            raise BadBody("names no step")
        said = body.get("server")
        known = self._calls.get(step)
        if said is not None and known is not None and said != known.server:
            self.found.add(Check.UNDO_RECEIPT_INVALID, entry.id, f"server {said!r} is not {step}'s server")
        if "answer" in body:
            self._answer(entry, step, body["answer"], Check.UNDO_RECEIPT_INVALID, "undo answer")

    def _reversal(self, entry: Entry) -> None:
        for line in _list(entry.body, "steps"):
            if not isinstance(line, Mapping) or not isinstance(line.get("entry"), str):
                raise BadBody("a step line that names no entry")
            if "receipt" in line:
                self._answer(entry, line["entry"], line["receipt"], Check.UNDO_RECEIPT_INVALID, "undo answer")

    def _answer(self, entry: Entry, step: str, answer: Any, code: Check, what: str) -> None:
        """A check/compensate answer about ``step``'s token, signed by ``step``'s server."""
        call = self._calls.get(step)
        self.receipts_checked += 1
        if call is None:
            self.found.add(code, entry.id, f"{what} for {step}, which is not a call of this run")
            return
        keys = self.recorder_keys if call.host else self._keys(call.server)
        if not isinstance(answer, Mapping):
            self.found.add(code, entry.id, f"{what} for {step} from {call.server!r} {_why(keys)}")
            return
        self._receipt_time(entry, what, answer.get("receipt"))

        def then(valid: bool) -> None:
            if not valid:
                self.found.add(code, entry.id, f"{what} for {step} from {call.server!r} {_why(keys)}")
            elif answer.get("tokenDigest") != call.token_digest:
                self.found.add(code, entry.id, f"{what} for {step} is about another token")

        self.signatures.check(_prepared(lambda: answer_task(answer, keys)), self._verdict(entry, then))

    # -- decisions ------------------------------------------------------------------

    def _decision(self, entry: Entry) -> None:
        body = entry.body
        approval = _mapping(body, "approval")
        counted = body.get("counted")
        if not isinstance(counted, bool):
            raise BadBody("counted is not true or false")
        self._time(entry, "approval at", approval.get("at"))
        self._receipt_time(entry, "approval receipt", body.get("receipt"))
        target = self._target(body, approval)
        if target.unknown:
            self.found.add(Check.DECISION_UNKNOWN_TARGET, entry.id, target.why)
        elif not target.found:
            self.found.add(Check.APPROVAL_TARGET_MISMATCH, entry.id, target.why)
        directory = self._directory(body.get("directory"), entry)
        if directory is None:
            if counted:
                self.found.add(
                    Check.DIRECTORY_MISSING, entry.id, "the directory of this decision is not at hand"
                )
            return
        person = directory.person(str(approval.get("by")))
        key = _person_key(directory, person.id) if person is not None else None
        task = (
            _signed_task(body.get("receipt"), {"approval": dict(approval)}, key) if key is not None else None
        )
        plan = self._plans.get(str(body.get("plan")))  # as it stands now, whenever the verdict comes

        def then(signed: bool) -> None:
            if not signed:
                detail = f"the approval is not signed by {approval.get('by')!r}'s key in the directory"
                if counted:
                    self.found.add(Check.APPROVAL_SIGNATURE_INVALID, entry.id, detail)
                else:
                    self.found.flag(Check.APPROVAL_SIGNATURE_INVALID, entry.id, detail)  # recorded as refused
                return
            assert person is not None
            assert key is not None
            self._approved(entry, person, key, target, plan)

        self.signatures.check(task, self._verdict(entry, then))

    def _approved(
        self, entry: Entry, person: Person, key: VerifyKey, target: _Target, plan: _Plan | None
    ) -> None:
        """What is checked of a decision whose signature holds: the approver's role, each override."""
        body = entry.body
        approval = _mapping(body, "approval")
        counted = body.get("counted")
        role = target.role
        if (
            counted
            and not target.unknown
            and not (isinstance(role, str) and (role in person.roles or person.id == role))
        ):
            self.found.add(Check.APPROVER_NOT_AUTHORIZED, entry.id, f"{person.id} does not hold {role!r}")
        for number, override in enumerate(_list(body, "overrides")):
            if isinstance(override, Mapping):
                choice = override.get("override")
                if isinstance(choice, Mapping):
                    self._time(entry, f"override {number + 1} at", choice.get("at"))
                self._receipt_time(entry, f"override {number + 1} receipt", override.get("receipt"))
            problem = _override_problem(override, approval, plan, key)
            if problem:
                self.found.add(Check.OVERRIDE_INVALID, entry.id, f"override {number + 1}: {problem}")

    def _link(self, entry: Entry) -> None:
        """A person's confirmation of a link: signed over the link, the run and its time."""
        body = entry.body
        if body.get("source") != "confirmed":
            return
        receipt = body.get("receipt")
        stamp = receipt.get("issuedAt") if isinstance(receipt, Mapping) else None
        self._receipt_time(entry, "link receipt", receipt)
        confirmation = {
            "run": self.run,
            **{name: body.get(name) for name in ("entry", "on", "via", "by")},
            "at": stamp,
        }
        directory = self._directory(body.get("directory"), entry)
        key = _person_key(directory, str(body.get("by"))) if directory is not None else None
        if directory is None:
            self.found.add(
                Check.DIRECTORY_MISSING, entry.id, "the directory of this confirmation is not at hand"
            )
        elif key is None or not _signed(receipt, {"link": confirmation}, key):
            detail = f"the link confirmation is not signed by {body.get('by')!r}'s key in the directory"
            self.found.add(Check.APPROVAL_SIGNATURE_INVALID, entry.id, detail)

    def _target(self, body: Mapping[str, Any], approval: Mapping[str, Any]) -> _Target:
        """The ask or plan decided, the role deciding it needs, and why not when it is not found."""
        if "plan" in body:
            named, kind = body["plan"], "plan"
            plan = self._plans.get(named) if isinstance(named, str) else None
            ref = f"{self.run}/{named}"
            if plan is None:
                return _Target(False, None, f"{named!r} is not an earlier {kind} of this run", unknown=True)
            if approval.get("plan") != ref or approval.get("planDigest") != plan.digest:
                return _Target(False, plan.approver, f"the approval signs another plan than {ref}")
            return _Target(True, plan.approver, "")
        named = body.get("ask")
        ask = self._asks.get(named) if isinstance(named, str) else None
        ref = f"{self.run}/{named}"
        if ask is None:
            return _Target(False, None, f"{named!r} is not an earlier ask of this run", unknown=True)
        if approval.get("ask") != ref or approval.get("callDigest") != ask.call_digest:
            return _Target(False, ask.approver, f"the approval signs another call than {ref}'s")
        return _Target(True, ask.approver, "")

    # -- helpers ----------------------------------------------------------------------

    def _keys(self, server: str | None) -> Mapping[str, VerifyKey]:
        return self.server_keys.get(server, {}) if server is not None else {}

    def _directory(self, digest: Any, entry: Entry) -> Directory | None:
        """The directory a decision or confirmation names; with a pinned directory, never another."""
        known = self.directories.get(digest) if isinstance(digest, str) else None
        if known is None and self.pinned_directory is not None:
            self.found.add(
                Check.DIRECTORY_NOT_PINNED, entry.id, f"names directory {digest!r}, not the one pinned"
            )
            return self.pinned_directory
        return known


_BY_KIND: dict[str, Callable[[BodyChecks, Entry], None]] = {
    "call": BodyChecks._call,
    "remedy": BodyChecks._call,
    "ask": BodyChecks._ask,
    "plan": BodyChecks._plan,
    "undo-outcome": BodyChecks._outcome,
    "reversal": BodyChecks._reversal,
    "decision": BodyChecks._decision,
    "link": BodyChecks._link,
}


_CALL_FIELDS = frozenset({"call", "ask", "refused"})
"""Kinds whose bodies carry a call's fields (``server``, ``tool``, ``arguments``, ``argumentsDigest``)."""
