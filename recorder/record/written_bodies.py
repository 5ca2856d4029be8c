"""Entry bodies as the Recorder writes them: one model per kind, so every member has a name and a type.

:meth:`Written.wire` gives the JSON the Recorder has always written (camelCase members; a member left
at ``None`` is absent, unless the model lists it in ``keep_none`` and it was given). The Run Record's
published schemas and records written before these models are unchanged: tests compare the bytes.
Writers build them with ``model_construct`` (our own data: no validation on the call path); readers
keep using :mod:`entry_bodies`, which is lenient where these are exact.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Written(BaseModel):
    """Base: camelCase members; ``None`` means absent, but for the members in ``keep_none``.

    ``exclude_none`` reaches into nested models, so a member holding a model with a ``keep_none``
    member of its own holds that model's :meth:`wire` instead (``PlanDecisionRecord.overrides``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    keep_none: ClassVar[frozenset[str]] = frozenset()
    """Members written as ``null`` when given as ``None`` (a call's ``journal`` when none came)."""

    def wire(self) -> dict[str, Any]:
        """The body as it is recorded (the JSON object the Run Record holds)."""
        data = self.model_dump(by_alias=True, exclude_none=True)
        for name in self.keep_none & self.model_fields_set:
            if getattr(self, name) is None:
                data[to_camel(name)] = None
        return data


# -- calls -----------------------------------------------------------------------------------------


class Outcome(Written):
    """``call.outcome``: ``ok``, ``error`` (the tool said so) or ``failed`` (it could not be reached)."""

    status: str
    error: str | None = None


class AgentAsked(Written):
    """What every call of the agent's starts with: who asked which tool, with what."""

    agent: str
    principal: str
    server: str
    tool: str
    arguments: dict[str, Any]
    arguments_digest: str | None = None


class CallRecord(AgentAsked):
    """A ``call`` entry: what the agent asked, what the policy decided, what came back."""

    keep_none: ClassVar[frozenset[str]] = frozenset({"journal"})

    declared: str | None = None
    host: dict[str, Any] | None = None
    ask: str | None = None
    decision: dict[str, Any] | None = None
    intake: dict[str, Any] | None = None
    journal: Any = None
    outcome: Outcome | None = None
    host_undo: dict[str, Any] | None = None
    links: list[dict[str, Any]] | None = None
    remedies: str | None = None  # a remedy: the call that could not be undone, which this one remedies


class RefusedRecord(Written):
    """A ``refused`` entry: a call the Recorder would not forward, with what it kept of it."""

    agent: str
    principal: str
    server: str | None = None
    tool: str
    arguments: dict[str, Any] | None = None
    arguments_digest: str | None = None
    arguments_refused: dict[str, Any] | None = None
    code: str
    run_key_digest: str | None = None
    host: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None  # the policy's, when it refused (a prompt: prompt_policy.py)


class AskTerms(Written):
    """What an ``ask`` adds to the body of the call it holds (a :class:`CallRecord`'s members): the
    digest the approval signs, who decides and by when."""

    call_digest: str
    approver: str
    decide_by: str


class WithdrawnRecord(Written):
    """A ``withdrawn``: an ask whose deadline passed undecided, and whom it had asked."""

    ask: str
    code: str
    decide_by: str
    asked: list[str]


class CallApproval(Written):
    """What a person signs when deciding a call's ask."""

    ask: str
    call_digest: str
    decision: str
    by: str
    at: str


class CallDecisionRecord(Written):
    """A ``decision`` on a call's ask: counted, or not with why."""

    ask: str
    approval: CallApproval
    receipt: dict[str, Any]
    directory: str
    counted: bool
    why: str | None = None


class NoteOutcome(Written):
    """How an agent tool's call ended: ``ok`` with what it did, or ``refused`` with a code."""

    model_config = ConfigDict(extra="allow")  # ``ok`` carries what the tool did, by tool

    status: str
    code: str | None = None


class NoteRecord(AgentAsked):
    """A ``note``: a call of one of the Recorder's own agent tools (not a step of the run)."""

    keep_none: ClassVar[frozenset[str]] = frozenset({"arguments_digest"})  # null: arguments not kept whole

    outcome: NoteOutcome


class RemedyCall(Written):
    """A ``call`` that remedies a call no undo can take back (``remedies``), filed straight into the
    store by the conformance adapter (``gateway/conformance_adapter.py``): the call alone."""

    server: str
    tool: str
    arguments: dict[str, Any]
    remedies: str


class HostNote(Written):
    """A ``note`` the Recorder writes of what it did itself, no agent tool's call: a run continued
    by its key (``runs/keys.py``), a server's request to the agent relayed or refused
    (``gateway/relay.py``). ``arguments`` is what the request carried, as the record keeps it."""

    server: str
    tool: str
    arguments: Any
    outcome: dict[str, Any]


class HostUndoRecord(Written):
    """A call's ``hostUndo`` member: what the host needs to undo a call of a server that knows nothing
    of undo, signed by the Recorder (``receipt``); or only ``failed``, why it can't."""

    keep_none: ClassVar[frozenset[str]] = frozenset({"snapshot", "after_state"})  # JSON null is a state

    server: str | None = None
    tool: str | None = None
    resource: str | None = None
    summary: str | None = None
    snapshot: Any = None
    before: str | None = None
    state: dict[str, Any] | None = None
    inverse: dict[str, Any] | list[dict[str, Any]] | None = None
    restored: str | None = None
    after: str | None = None
    after_state: Any = None
    cascade: list[dict[str, Any]] | None = None
    receipt: dict[str, Any] | None = None
    failed: str | None = None


# -- undo: the plan, the decision, each step, the Reversal Record ---------------------------------


class PlanRecord(Written):
    """A ``plan``: the Reversal Plan as an ask, the check answers it was built from, and its deadline."""

    plan: dict[str, Any]
    plan_digest: str
    checks: dict[str, Any]
    approver: str | None
    decide_by: str

    keep_none: ClassVar[frozenset[str]] = frozenset({"approver"})


class PlanApproval(Written):
    """What a person signs when deciding a plan."""

    plan: str
    plan_digest: str
    decision: str
    by: str
    at: str


class OverrideChoice(Written):
    """One explicit choice to overwrite what changed in a conflicted step (``versionFound`` may be null)."""

    keep_none: ClassVar[frozenset[str]] = frozenset({"version_found"})

    plan: str
    plan_digest: str
    step: str
    version_found: str | None
    by: str
    at: str


class SignedOverride(Written):
    """An override and the person's signature over it."""

    override: dict[str, Any]  # an OverrideChoice.wire(): exclude_none would drop its null versionFound
    receipt: dict[str, Any]


class PlanDecisionRecord(Written):
    """A ``decision`` on a plan: counted, or not with why; overrides only on one that counted."""

    plan: str
    approval: PlanApproval
    receipt: dict[str, Any]
    directory: str
    counted: bool
    why: str | None = None
    overrides: list[dict[str, Any]] | None = None  # each a SignedOverride.wire()


class IntentRecord(Written):
    """An ``undo-intent``: the compensate request about to be sent (proof included)."""

    plan: str
    step: str
    request: dict[str, Any]


class OutcomeRecord(Written):
    """An ``undo-outcome``: the server's signed answer, or why none came (``failed``)."""

    plan: str
    step: str
    intent: str
    server: str
    attempt: int
    answer: dict[str, Any] | None = None
    failed: str | None = None


class HaltedRecord(Written):
    """An ``undo-halted``: the approver lost the authority the approval needs; ``before`` the step the
    undo was about to compensate (null: before it started)."""

    keep_none: ClassVar[frozenset[str]] = frozenset({"before"})

    plan: str
    code: str
    by: str
    decision: str
    check: str
    reason: str
    before: str | None


class LinkRecord(Written):
    """A ``link`` a person confirmed: ``entry`` relies on ``on``, signed by them."""

    entry: str
    on: str
    via: str
    by: str
    source: str
    receipt: dict[str, Any]
    directory: str


class ReversalLineRecord(Written):
    """One line of the Reversal Record: ``undo`` but for a step that cannot be undone, ``receipt`` the
    server's signed answer whole, ``retry`` only when no answer came."""

    step: int
    entry: str
    summary: str
    status: str
    undo: str | None = None
    reason: str | None = None
    remedy: str | None = None
    receipt: dict[str, Any] | None = None
    retry: bool | None = None


class ReversalRecord(Written):
    """A ``reversal``: the Reversal Record, one line per step, newest first, and the counts."""

    plan: str
    steps: list[dict[str, Any]]
    counts: dict[str, int]


# -- notices -------------------------------------------------------------------------------------


class NoticeRecord(Written):
    """A ``review``, ``reminder``, ``escalation`` or ``lapse`` written by ``tick``: which step (none for
    a run's review), whom it was for, and (once ``tick`` sent it) when and to which addresses."""

    step: str | None = None
    undo_by: str | None = None
    summary: str | None = None
    after: str | None = None  # a lapse: "escalation" or "quiet"
    reminded: bool | None = None
    role: str | None = None
    to: list[str] | None = None
    link: str | None = None
    reached: list[dict[str, Any]] | None = None  # a lapse: each notice of the step delivered, and to whom
    at: str | None = None
    mailed_to: list[str] | None = None  # records before the mail queue: the addresses it was sent to
    mail_to: list[str] | None = None  # the addresses its mail is queued for (delivered: ``mail-delivered``)
    message_id: str | None = None
    subject: str | None = None
    text: str | None = None


class MailDeliveredRecord(Written):
    """A ``mail-delivered``: the SMTP server accepted the notice's mail (250), at which attempt."""

    notice: str
    to: list[str]
    message_id: str
    attempts: int
    at: str


class MailDeferredRecord(Written):
    """A ``mail-deferred``: one attempt failed in a way that may pass (4xx, server unreachable);
    the mail is tried again from ``retryAt``."""

    notice: str
    code: str
    error: str
    attempt: int
    at: str
    retry_at: str


class MailFailedRecord(Written):
    """A ``mail-failed``: the notice whose mail never left, and why (refused for good, or the last
    of its attempts failed)."""

    notice: str
    error: str
    at: str
    code: str | None = None
    attempts: int | None = None


# -- people ----------------------------------------------------------------------------------------


class SeenRecord(Written):
    """A ``seen``: a person looked at a run's review (``runs/reminders.py``)."""

    by: str
    at: str
