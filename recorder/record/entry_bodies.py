"""Entry bodies as the Recorder's readers see them: one typed boundary for recorded data.

The planner, ``show``, the review page and ``tick`` read a body only through these models. A body
(or a server's signed object inside one) that does not fit is never a crash: :func:`read_body`
answers :class:`Unreadable` with a stable :class:`ReadCode`, the body stays in the record as it was
written, and the reader shows that one entry as unreadable (the planner: ``unresolved``).

The models allow members they do not name (a later Recorder may write more); the members they name
must have their type. The verifier (``bodies.BodyChecks``) keeps its own checks and codes.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeVar, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hatp_journal.recorder.record.kept_journal import KeptJournal, KeptUndo, read_check_answer, read_journal
from hatp_journal.recorder.record.kinds import EntryKind
from hatp_journal.recorder.record.models import Entry
from hatp_journal.recorder.record.undo_bodies import (
    ApprovalPart,
    DecisionBody,
    HaltedBody,
    IntentAsSent,
    IntentBody,
    IntentRequest,
    OutcomeAsSent,
    OutcomeBody,
    OverrideChoice,
    PlanBody,
    PlanSections,
    ReversalBody,
    ReversalLine,
    SignedOverride,
)
from hatp_journal.recorder.record.unreadable import (
    BodyModel,
    OrAbsent,
    ReadCode,
    Unreadable,
    WireTime,
    unreadable,
)

__all__ = [
    "ApprovalPart",
    "BodyModel",
    "DecisionBody",
    "HaltedBody",
    "IntentAsSent",
    "IntentBody",
    "IntentRequest",
    "KeptJournal",
    "KeptUndo",
    "OutcomeAsSent",
    "OutcomeBody",
    "OverrideChoice",
    "PlanBody",
    "PlanSections",
    "ReadCode",
    "ReversalBody",
    "ReversalLine",
    "SignedOverride",
    "Unreadable",
    "WireTime",
    "read_check_answer",
    "read_journal",
    "unreadable",
]


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


class CalledTool(BodyModel):
    """The call an entry is about: which server's tool, with what arguments."""

    server: str
    tool: str
    arguments: dict[str, Any]


class AskBody(CalledTool):
    """An ``ask``: the call held for a person, what exactly an approval signs, who decides, until when."""

    agent: str = ""
    principal: str = ""
    arguments_digest: str | None = None
    declared: str | None = None
    decision: AskDecision | None = None
    call_digest: str
    approver: str
    decide_by: WireTime
    remedies: str | None = None
    preview: Any = None  # the server's dry run of the call, read by previews.preview_words


class Mentioned(BodyModel):
    """What any entry names, read alone: the ask it follows up (a decision, a withdrawal, the call it
    let through), the server it is about, the directory it was decided by. A member that is not a
    string names nothing; other members are not looked at."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    ask: Annotated[str | None, OrAbsent] = None
    server: Annotated[str | None, OrAbsent] = None
    directory: Annotated[str | None, OrAbsent] = None


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
    message_id: str | None = None
    subject: str | None = None
    text: str | None = None
    """The queued mail (``notice_mail.py``): its addresses, Message-ID, subject and text."""


class NoteOutcome(BodyModel):
    """A ``note``'s outcome: ``ok`` or ``refused``, and what the tool did (a checkpoint's place)."""

    status: str = ""
    after_step: int | None = None
    continues: Annotated[str | None, OrAbsent] = None
    """``continue_run``'s: the run it continues (one that is not a string: none)."""


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


class LinkBody(MentionBody):
    """``link``: a reviewer's confirmation that call ``entry`` relied on ``on`` (``confirm-link``)."""

    on: str | None = None
    source: str = ""
    via: str | None = None
    by: str | None = None


class KeptOfArguments(BodyModel):
    """``argumentsRefused``: what a refused entry keeps of arguments the record can't hold."""

    reason: str = ""
    bytes: int | None = None


class RefusedBody(BodyModel):
    """A ``refused``: a call, a prompt get or a resource read the Recorder did not forward, and why
    (its code; the policy's decision, or what is known of an approved call in doubt). ``server`` is
    absent when nothing the Recorder publishes serves what was asked."""

    server: str | None = None
    tool: str = ""
    arguments: Any = None
    arguments_refused: KeptOfArguments | None = None
    code: str = ""
    decision: AskDecision | None = None
    ask: str | None = None
    why: str = ""


class OtherBody(BodyModel):
    """A kind no reader looks into."""


class _Typed(BaseModel):
    model_config = ConfigDict(frozen=True)


class CallEntry(_Typed):
    kind: Literal["call"]
    body: CallBody


class AskEntry(_Typed):
    kind: Literal["ask"]
    body: AskBody


class PlanEntry(_Typed):
    kind: Literal["plan"]
    body: PlanBody


class DecisionEntry(_Typed):
    kind: Literal["decision"]
    body: DecisionBody


class IntentEntry(_Typed):
    kind: Literal["undo-intent"]
    body: IntentBody


class OutcomeEntry(_Typed):
    kind: Literal["undo-outcome"]
    body: OutcomeBody


class ReversalEntry(_Typed):
    kind: Literal["reversal"]
    body: ReversalBody


class HaltedEntry(_Typed):
    kind: Literal["undo-halted"]
    body: HaltedBody


class MailFailedEntry(_Typed):
    kind: Literal["mail-failed"]
    body: MailFailedBody


class MailDeferredEntry(_Typed):
    kind: Literal["mail-deferred"]
    body: MailDeferredBody


class MailDeliveredEntry(_Typed):
    kind: Literal["mail-delivered"]
    body: MailDeliveredBody


class NoticeEntry(_Typed):
    kind: Literal["review", "reminder", "escalation", "lapse"]
    body: NoticeBody


class NoteEntry(_Typed):
    kind: Literal["note"]
    body: NoteBody


class LinkEntry(_Typed):
    kind: Literal["link"]
    body: LinkBody


class MentionEntry(_Typed):
    kind: Literal["withdrawn"]
    body: MentionBody


class RefusedEntry(_Typed):
    kind: Literal["refused"]
    body: RefusedBody


class OtherEntry(_Typed):
    """``seen``: a kind no reader looks into."""

    kind: Literal["seen"]
    body: OtherBody


TypedEntry = Annotated[
    CallEntry
    | AskEntry
    | PlanEntry
    | DecisionEntry
    | IntentEntry
    | OutcomeEntry
    | ReversalEntry
    | HaltedEntry
    | MailFailedEntry
    | MailDeferredEntry
    | MailDeliveredEntry
    | NoticeEntry
    | NoteEntry
    | LinkEntry
    | MentionEntry
    | RefusedEntry
    | OtherEntry,
    Field(discriminator="kind"),
]
"""Every entry as its readers see it: one member per kind (``kinds.EntryKind``), its body typed."""

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
    | NoteBody
    | LinkBody
    | MentionBody
    | RefusedBody
    | OtherBody
)


def _models_by_kind() -> dict[str, type[Body]]:
    members = get_args(get_args(TypedEntry)[0])
    return {
        kind: cast("type[Body]", member.model_fields["body"].annotation)
        for member in members
        for kind in get_args(member.model_fields["kind"].annotation)
    }


BODY_MODELS: Final[dict[str, type[Body]]] = _models_by_kind()
"""The model each kind's body is read with, from :data:`TypedEntry`; an unknown kind reads as
:class:`OtherBody` (a later Recorder's: the verifier is the one to report it)."""

_TYPED_ENTRY: TypeAdapter[TypedEntry] = TypeAdapter(TypedEntry)


def read_entry(entry: Entry) -> TypedEntry | Unreadable:
    """``entry`` as its kind's member of :data:`TypedEntry` (an unknown kind: unreadable)."""
    try:
        return _TYPED_ENTRY.validate_python({"kind": entry.kind, "body": entry.body})
    except ValidationError as error:
        return unreadable(ReadCode.BODY_UNREADABLE, error)


def kind_of(entry: Entry) -> EntryKind | None:
    """``entry``'s kind, if it is one a Recorder writes."""
    return cast("EntryKind", entry.kind) if entry.kind in BODY_MODELS else None


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


def mentioned(entry: Entry) -> Mentioned:
    """What ``entry`` names (never a failure: see :class:`Mentioned`)."""
    return Mentioned.model_validate(entry.body)


def asked_in(entry: Entry) -> str | None:
    """The id of the ask ``entry`` follows up, if it names one (a string)."""
    return mentioned(entry).ask


def reversed_entries(entries: list[Entry]) -> set[str]:
    """The calls some Reversal Record says were reversed (an unreadable reversal says none)."""
    done: set[str] = set()
    for entry in entries:
        if entry.kind == "reversal":
            body = read_as(ReversalBody, entry)
            if isinstance(body, ReversalBody):
                done.update(line.entry for line in body.steps if line.status == "reversed")
    return done
