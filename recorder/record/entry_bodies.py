"""Entry bodies as the Recorder's readers see them: one typed boundary for recorded data.

The planner, ``show``, the review page and ``tick`` read a body only through these models. A body
(or a server's signed object inside one) that does not fit is never a crash: :func:`read_body`
answers :class:`Unreadable` with a stable :class:`ReadCode`, the body stays in the record as it was
written, and the reader shows that one entry as unreadable (the planner: ``unresolved``).

The models allow members they do not name (a later Recorder may write more); the members they name
must have their type. The verifier (``bodies.BodyChecks``) keeps its own checks and codes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, ValidationError
from pydantic.alias_generators import to_camel

from hatp_journal._shared.text import shown
from hatp_journal.recorder.record.models import Entry
from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.toolkit.wire import CallBinding, EffectInfo, Money, Receipt, UndoAnswer, UndoKind, Via


class ReadCode(StrEnum):
    """Why a reader could not use what was recorded (stable, shown next to the entry)."""

    BODY_UNREADABLE = "BODY_UNREADABLE"
    """An entry's body is not of the shape its kind has."""
    JOURNAL_UNREADABLE = "JOURNAL_UNREADABLE"
    """A journal object recorded as verified does not fit the wire format (an ``undoBy`` that is not
    a wire time, a field of the wrong type): its server signed something no reader can use."""
    CHECK_ANSWER_UNREADABLE = "CHECK_ANSWER_UNREADABLE"
    """A signed ``check`` answer that does not fit the wire format (a ``versionFound`` that is not a
    string, ``changes`` that is not a list, an ``undoBy`` that is not a wire time)."""


def _wire_time(value: str) -> str:
    if not is_wire_time(value):
        raise ValueError("not a wire time (YYYY-MM-DDTHH:MM:SSZ, UTC, to the second)")
    return value


WireTime = Annotated[str, AfterValidator(_wire_time)]
"""A time as the record writes it; offsets, fractions, leap seconds and dates alone are refused."""


class BodyModel(BaseModel):
    """Base: camelCase members, unnamed members kept, named ones typed."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True)


class Unreadable(BaseModel):
    """The marker every reader shows for an entry it could not read: the code, and what did not fit."""

    model_config = ConfigDict(frozen=True)

    code: ReadCode
    detail: str

    def text(self) -> str:
        """``JOURNAL_UNREADABLE: undo.undoBy``: how the entry reads where its contents would (every
        control character escaped: a member's name may be anything)."""
        return shown(f"{self.code}: {self.detail}")


_PLACE_CHARS = 80
"""How much of a member's path a marker shows (a hostile key may be of any length)."""


def unreadable(code: ReadCode, error: ValidationError) -> Unreadable:
    """The marker for ``error``, naming the members that did not fit (never their values)."""
    places = [".".join(str(part) for part in e["loc"]) or "(the whole object)" for e in error.errors()[:5]]
    cut = [place if len(place) <= _PLACE_CHARS else place[:_PLACE_CHARS] + "…" for place in places]
    return Unreadable(code=code, detail=", ".join(dict.fromkeys(cut)))


# -- the journal object a call kept, and a server's check answer --------------------------------


class KeptUndo(BodyModel):
    """``journal.undo``: the undo terms, ``undoBy`` a wire time."""

    model_config = ConfigDict(extra="forbid")

    kind: UndoKind
    undo_by: WireTime | None = None
    via: Via = "api"
    side_effects: list[str] = Field(default_factory=list)
    cost: Money | None = None


class KeptJournal(BodyModel):
    """A verified journal object as a call entry keeps it: the token replaced by its digest."""

    model_config = ConfigDict(extra="forbid")

    protocol: str | None = None
    server: str
    read: bool = False
    undo: KeptUndo | None = None
    compensation_token_digest: str | None = None
    effect: EffectInfo | None = None
    reason: str | None = None
    remedy: str | None = None
    call: CallBinding | None = None
    receipt: Receipt | None = None


def read_journal(raw: Any) -> KeptJournal | Unreadable:
    """A verified journal object read through :class:`KeptJournal`, or why it can't be."""
    try:
        return KeptJournal.model_validate(raw)
    except ValidationError as error:
        return unreadable(ReadCode.JOURNAL_UNREADABLE, error)


def read_check_answer(raw: Any) -> UndoAnswer | Unreadable:
    """A signed ``check`` answer read with the wire's :class:`UndoAnswer`; its ``undoBy`` must be a
    wire time, since the planner compares it with the clock."""
    try:
        answer = UndoAnswer.model_validate(raw)
    except ValidationError as error:
        return unreadable(ReadCode.CHECK_ANSWER_UNREADABLE, error)
    if answer.undo_by is not None and not is_wire_time(answer.undo_by):
        return Unreadable(code=ReadCode.CHECK_ANSWER_UNREADABLE, detail="undoBy")
    return answer


# -- entry bodies, by kind ----------------------------------------------------------------------


class IntakeVerdict(BodyModel):
    """``call.intake``: what the Recorder concluded about the journal object when it came in."""

    status: Literal["verified", "unresolved", "absent", "error"]
    kind: Literal["compensate", "none", "unknown", "read"]
    reason: str | None = None


class CallOutcome(BodyModel):
    """``call.outcome``: whether the tool answered, and how."""

    status: Literal["ok", "error", "failed"]
    error: str | None = None


class Verdict(BodyModel):
    """The reversibility verdict a policy decision carries: its class (``R0``…``R4``)."""

    rclass: str | None = Field(default=None, alias="class")


class CallDecision(BodyModel):
    """``call.decision``: what the policy (or an approver) decided, and by which class."""

    action: str = ""
    reversibility: Verdict | None = None


class CallBody(BodyModel):
    """A ``call`` (and ``remedy``): what reached a tool server and what came back. ``journal`` is kept
    raw here: it is the server's object, read through :func:`read_journal` once intake verified it."""

    server: str = ""
    tool: str = ""
    arguments: Any = None
    intake: IntakeVerdict | None = None
    journal: Any = None
    outcome: CallOutcome | None = None
    declared: str | None = None
    decision: CallDecision | None = None
    remedies: str | None = None
    host_undo: Any = None
    """What the host (the Recorder) keeps to undo the call itself (``host_undo.py``), as written."""


class AskReason(BodyModel):
    """Why the policy held a call: a code and its detail."""

    code: str = ""
    detail: str = ""


class AskDecision(BodyModel):
    """The policy's decision recorded with an ask: its class, its reasons and the caps' totals."""

    action: str = ""
    reversibility: Verdict | None = None

    @property
    def rclass(self) -> str | None:
        """The reversibility class it was decided by, if recorded."""
        return self.reversibility.rclass if self.reversibility is not None else None

    reasons: list[AskReason] = Field(default_factory=list)
    totals: dict[str, dict[str, Any]] = Field(default_factory=dict)


class AskBody(BodyModel):
    """An ``ask``: the call held for a person, what exactly an approval signs, who decides, until when."""

    server: str
    tool: str
    arguments: dict[str, Any]
    declared: str | None = None
    decision: AskDecision | None = None
    call_digest: str
    approver: str
    decide_by: WireTime
    remedies: str | None = None
    preview: Any = None  # the server's dry run of the call, read by previews.preview_words


class AskedBody(BodyModel):
    """Any entry read only for the ask it follows up (a decision, a withdrawal, the call it let
    through): other members are not looked at."""

    model_config = ConfigDict(extra="ignore")

    ask: str | None = None


class PlanSections(BodyModel):
    """The parts of a recorded plan that ``show`` counts."""

    request: str = ""
    steps: list[Any] = Field(default_factory=list)
    conflicts: list[Any] = Field(default_factory=list)
    not_reversible: list[Any] = Field(default_factory=list)


class PlanBody(BodyModel):
    plan: PlanSections
    approver: str | None = ""
    plan_digest: str = ""
    checks: dict[str, Any] = Field(default_factory=dict)
    """The signed ``check`` answers the plan was built from, by the step's entry id (kept whole)."""
    decide_by: str = ""


class ApprovalPart(BodyModel):
    decision: str = ""
    by: str = ""
    at: str | None = None


class OverrideChoice(BodyModel):
    step: str


class SignedOverride(BodyModel):
    override: OverrideChoice
    receipt: Any = None


class DecisionBody(BodyModel):
    approval: ApprovalPart
    receipt: Any = None
    """The person's signed receipt of ``approval``, kept whole."""
    counted: StrictBool = False
    why: str = ""
    plan: str | None = None
    ask: str | None = None
    overrides: list[SignedOverride] = Field(default_factory=list)


class IntentRequest(BodyModel):
    if_version: str | None = None


class IntentBody(BodyModel):
    step: str
    plan: str | None = None
    request: IntentRequest = Field(default_factory=IntentRequest)


class OutcomeBody(BodyModel):
    """``undo-outcome``: the server's signed compensate answer, or why none came."""

    step: str
    answer: UndoAnswer | None = None
    failed: str = ""
    plan: str | None = None
    attempt: int | None = None
    """Outcomes written before retries had no number: the first attempt."""


class OutcomeAsSent(BodyModel):
    """``undo-outcome`` as the executor reads it: which step, which attempt, and the answer kept
    whole (the server's signed object goes into the Reversal Record byte for byte, as it came)."""

    step: str
    plan: str | None = None
    attempt: int | None = None
    answer: Any = None
    failed: str | None = None


class IntentAsSent(BodyModel):
    """``undo-intent`` as the executor reads it: the request kept whole, to be sent again as it was."""

    step: str
    plan: str | None = None
    request: dict[str, Any]


class ReversalLine(BodyModel):
    """One line of a Reversal Record; ``receipt`` is the server's signed answer, kept whole."""

    entry: str
    status: str
    retry: bool = False
    step: int | None = None
    summary: str = ""
    undo: str | None = None
    reason: str = ""
    remedy: str | None = None
    receipt: Any = None


class ReversalBody(BodyModel):
    plan: str
    counts: dict[str, int] = Field(default_factory=dict)
    steps: list[ReversalLine] = Field(default_factory=list)


class HaltedBody(BodyModel):
    plan: str
    code: str = ""
    reason: str = ""
    before: str | None = None


class MailBody(BodyModel):
    """What became of a notice's mail: ``mail-delivered``, ``mail-deferred`` or ``mail-failed``."""

    notice: str
    error: str = ""
    code: str = ""
    to: list[str] | None = None
    attempts: int | None = None
    attempt: int | None = None
    retry_at: WireTime | None = None


class MailFailedBody(MailBody):
    """``mail-failed``: refused for good, or its last attempt failed."""


class MailDeferredBody(MailBody):
    """``mail-deferred``: one attempt failed in a way that may pass; tried again from ``retryAt``."""


class MailDeliveredBody(MailBody):
    """``mail-delivered``: the SMTP server accepted the mail."""


class NoticeBody(BodyModel):
    """``review``, ``reminder``, ``escalation``, ``lapse``: written by ``tick``, one per step and kind."""

    step: str | None = None
    undo_by: WireTime | None = None
    summary: str | None = None
    after: str | None = None
    mailed_to: list[str] | None = None
    mail_to: list[str] | None = None


class NoteOutcome(BodyModel):
    """A ``note``'s outcome: ``ok`` or ``refused``, and what the tool did (a checkpoint's place)."""

    status: str = ""
    after_step: int | None = None


class NoteBody(BodyModel):
    """A ``note``: a call of one of the Recorder's own agent tools."""

    server: str = ""
    tool: str = ""
    arguments: Any = None
    outcome: NoteOutcome | None = None


class MentionBody(BodyModel):
    """``withdrawn``, ``link`` and the like: the ask or entry they are about."""

    ask: str | None = None
    entry: str | None = None
    code: str = ""


class OtherBody(BodyModel):
    """A kind no reader looks into."""


Body = (
    CallBody
    | AskBody
    | PlanBody
    | DecisionBody
    | IntentBody
    | OutcomeBody
    | ReversalBody
    | HaltedBody
    | MailFailedBody
    | MailDeferredBody
    | MailDeliveredBody
    | NoticeBody
    | MentionBody
    | OtherBody
)

BODY_MODELS: dict[str, type[Body]] = {
    "call": CallBody,
    "ask": AskBody,
    "plan": PlanBody,
    "decision": DecisionBody,
    "undo-intent": IntentBody,
    "undo-outcome": OutcomeBody,
    "reversal": ReversalBody,
    "undo-halted": HaltedBody,
    "mail-failed": MailFailedBody,
    "mail-deferred": MailDeferredBody,
    "mail-delivered": MailDeliveredBody,
    "review": NoticeBody,
    "reminder": NoticeBody,
    "escalation": NoticeBody,
    "lapse": NoticeBody,
    "withdrawn": MentionBody,
    "link": MentionBody,
}
"""The model each kind's body is read with; any other kind reads as :class:`OtherBody`."""

B = TypeVar("B", bound=BodyModel)


def read_body(entry: Entry) -> Body | Unreadable:
    """``entry``'s body through its kind's model, or the unreadable marker."""
    try:
        return BODY_MODELS.get(entry.kind, OtherBody).model_validate(entry.body)
    except ValidationError as error:
        return unreadable(ReadCode.BODY_UNREADABLE, error)


def read_as(model: type[B], entry: Entry) -> B | Unreadable:
    """``entry``'s body through ``model`` (for a reader that wants one kind only)."""
    try:
        return model.model_validate(entry.body)
    except ValidationError as error:
        return unreadable(ReadCode.BODY_UNREADABLE, error)


class OwnBodyUnreadable(ValueError):
    """A body the Recorder wrote itself does not fit its model (an edited store): never guessed at."""

    code = ReadCode.BODY_UNREADABLE

    def __init__(self, entry: Entry, marker: Unreadable) -> None:
        super().__init__(f"{entry.run}/{entry.id} ({entry.kind}) is unreadable: {marker.text()}")
        self.marker = marker


def read_own(model: type[B], entry: Entry) -> B:
    """``entry``'s body through ``model``, for a body the Recorder wrote and now acts on (a plan, a
    decision, an undo step): one that does not fit raises :class:`OwnBodyUnreadable`."""
    body = read_as(model, entry)
    if isinstance(body, Unreadable):
        raise OwnBodyUnreadable(entry, body)
    return body


def asked_in(entry: Entry) -> str | None:
    """The id of the ask ``entry`` follows up, if it names one (a string)."""
    try:
        return AskedBody.model_validate(entry.body).ask
    except ValidationError:
        return None


def reversed_entries(entries: list[Entry]) -> set[str]:
    """The calls some Reversal Record says were reversed (an unreadable reversal says none)."""
    done: set[str] = set()
    for entry in entries:
        if entry.kind == "reversal":
            body = read_as(ReversalBody, entry)
            if isinstance(body, ReversalBody):
                done.update(line.entry for line in body.steps if line.status == "reversed")
    return done
