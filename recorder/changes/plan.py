"""The Reversal Plan: what an undo would do, shown to a person for approval (protocol.md §9).

The JSON form (:class:`ReversalPlan`, schema in ``docs/schema/reversal-plan.schema.json``) is
what the approval signs, by its digest; :func:`plan_text` is what people read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import Field

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.text import shown_lines
from hatp_journal.toolkit.versions import changes_text
from hatp_journal.toolkit.wire import EffectChange, FieldChange, Money, ResourceFound, WireModel

PLAN_FORMAT: Final = "hatp-reversal-plan/1"
BY_HOST: Final = "undone by the host, not the server"
HOST_WORDS: Final = (
    '"host": the Recorder undoes it with calls a host registry declares (the server knows nothing '
    "of undo); absent: the server undoes it"
)


class PlannedItem(WireModel):
    """What every section says about a step: which call it was and what it did."""

    step: int = Field(ge=1, description="The call's number in the run (step N = the N-th call)")
    entry: str
    server: str
    tool: str
    summary: str


class UndoStep(PlannedItem):
    """A step to compensate."""

    undo: str = Field(description="What the compensation does, for people")
    side_effects: list[str] = Field(default_factory=list)
    cost: Money | None = None
    resource: str | None = None
    undo_by: str | None = None
    after: str | None = Field(
        default=None, description="A later step of this plan that changed the same resource first"
    )
    undone_by: Literal["host"] | None = Field(default=None, description=HOST_WORDS)


class Conflict(PlannedItem):
    """A step whose resource changed since the call: kept unless the approver overrides it."""

    undo: str
    resource: str | None = None
    version_expected: str | None = None
    version_found: str | None = None
    changed_by: str | None = None
    changes: list[FieldChange] = Field(default_factory=list)
    message: str = ""
    undone_by: Literal["host"] | None = Field(default=None, description=HOST_WORDS)
    resources: list[ResourceFound] | None = Field(
        default=None,
        description="For a call that wrote several resources: each as its server's check found it; "
        "an override overwrites each conflict at the version found here",
    )


class NotReversible(PlannedItem):
    """A step that can't be undone: declared ``none``, or ``unknown`` (no undo offered)."""

    kind: Literal["none", "unknown"]
    reason: str
    remedy: str | None = None


class Unresolved(PlannedItem):
    """A step whose journal object failed intake, or whose check could not run."""

    reason: str
    code: str | None = Field(
        default=None,
        description="Set when what was recorded or answered could not be read or kept: JOURNAL_UNREADABLE, "
        "CHECK_ANSWER_UNREADABLE, BODY_UNREADABLE or ANSWER_REFUSED (docs/recorder.md)",
    )


class Expired(PlannedItem):
    """A step whose undo window has closed."""

    undo_by: str | None = None


class Blocked(PlannedItem):
    """A step kept because a later step that relied on it stays."""

    undo: str
    kept_for: list[str]


class AlreadyReversed(PlannedItem):
    """A step an earlier reversal already compensated."""


class ChangedNothing(PlannedItem):
    """A step whose call changed nothing (the state after it is what undoing it would restore, or
    the tool refused it): shown so the person sees it was looked at, never executed."""

    reason: str


class ReadSince(WireModel):
    """An entry of another run that read a changed resource after the change."""

    run: str
    entry: str
    agent: str
    server: str
    tool: str
    time: str
    resource: str
    through: Literal["uses", "arguments"]


class ReversalPlan(WireModel):
    """One undo as planned. Every section lists steps newest first."""

    format: Literal["hatp-reversal-plan/1"] = PLAN_FORMAT
    run: str
    agent: str
    principal: str
    requested_by: str
    request: str = Field(description='What was asked: "from 1" or "steps 2, 5"')
    through: str | None = Field(
        description="The last call of the run when planned; a later call makes it stale"
    )
    undo_authority: str
    steps: list[UndoStep] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    not_reversible: list[NotReversible] = Field(default_factory=list)
    unresolved: list[Unresolved] = Field(default_factory=list)
    expired: list[Expired] = Field(default_factory=list)
    blocked: list[Blocked] = Field(default_factory=list)
    already_reversed: list[AlreadyReversed] = Field(default_factory=list)
    changed_nothing: list[ChangedNothing] | None = Field(
        default=None,
        description="Steps whose call changed nothing: shown, never executed. Absent when there is "
        "none, so a plan made before this section existed keeps its digest",
    )
    read_since: list[ReadSince] = Field(default_factory=list)
    unrecorded_memory: str = Field(description="Whose memory the readSince list can't see")

    def digest(self) -> str:
        """``sha256:…`` of the plan's RFC 8785 form: what an approval signs."""
        return sha256_digest(self.wire())

    def entries(self) -> list[str]:
        """Every entry the plan names, whatever its section."""
        sections: list[list[Any]] = [
            self.steps,
            self.conflicts,
            self.not_reversible,
            self.unresolved,
            self.expired,
            self.blocked,
            self.already_reversed,
            self.changed_nothing or [],
        ]
        return [item.entry for section in sections for item in section]


def undo_label(summary: str, changes: Sequence[EffectChange] | None = None) -> str:
    """How undoing a call reads, for the plan and the Reversal Record.

    With ``effect.changes`` every field is turned round: ``Item X available: 10 → 6; reserved:
    0 → 4`` becomes ``Item X available: 6 → 10; reserved: 4 → 0``. Without them only a summary
    with a single change can be turned round (``A → B`` becomes ``B → A``); a summary that starts
    with one of :data:`UNDO_VERBS` takes its opposite (``Create X`` becomes ``Cancel X``, ``Add X``
    ``Remove X``, ``Delete X`` ``Restore X``); anything else, several changes included, reads
    ``Undo: <summary>``.
    """
    if changes:
        return _undo_of_changes(summary, changes)
    if summary.startswith("Create "):  # before arrows: a created thing's name may hold one
        return "Cancel " + summary.removeprefix("Create ")
    if summary.count(" → ") == 1 and ";" not in summary:
        head, _, tail = summary.partition(" → ")
        prefix, colon, old = head.rpartition(": ")
        return f"{prefix}: {tail} → {old}" if colon else f"{tail} → {head}"
    for verb, opposite in UNDO_VERBS.items():  # after arrows: "Book price: 5 → 6" is a change
        if summary.startswith(verb + " "):
            return opposite + summary.removeprefix(verb)
    return f"Undo: {summary}"


UNDO_VERBS = {
    "Create": "Cancel",  # a booking, an order, an invitation: what people call taking it back
    "Book": "Cancel",
    "Add": "Remove",  # a record that is simply gone again
    "Insert": "Remove",
    "Delete": "Restore",
    "Remove": "Restore",
    "Archive": "Unarchive",
}
"""The first word of a summary, and the word that says undoing it (docs/binding.md)."""


def _undo_of_changes(summary: str, changes: Sequence[EffectChange]) -> str:
    """The summary with its changes turned round, when it ends with them as ``summarize`` writes
    them; else the summary as the server wrote it, followed by the changes turned round."""
    done, undone = changes_text(changes), changes_text(changes, undone=True)
    subject = summary.removesuffix(done)
    if subject != summary and (not subject or subject.endswith(" ")):
        return subject + undone
    return f"Undo: {summary} ({undone})"


def recorded_undo(line: Mapping[str, Any]) -> str:
    """What a Reversal Record line says undoing its step did; a record written before lines said
    so gets the words from the summary alone."""
    undo = line.get("undo")
    return undo if isinstance(undo, str) else undo_label(str(line.get("summary", "")))


def plan_text(
    plan: ReversalPlan,
    *,
    agent: str,
    principal: str,
    reaches: Mapping[str, Sequence[Sequence[str]]] | None = None,
) -> str:
    """The plan as people read it (for D-881 as protocol.md §0 shows it).

    Every item is named by its step number, the run's N-th call: the numbering the approver pages
    and the Reversal Record use, so "step 2" is the same action wherever it is read. ``reaches``
    gives, by a step's entry, the addresses each of its side effects reaches (in their order).
    """
    count = len(plan.steps)
    lines = [f"Undo {count} action{'s' * (count != 1)} by {agent} for {principal}:"]
    for step in plan.steps:
        whom = (reaches or {}).get(step.entry, [])
        notes = [
            *([BY_HOST] if step.undone_by == "host" else []),
            *[
                f"{effect}: {', '.join(whom[n])}" if n < len(whom) and whom[n] else effect
                for n, effect in enumerate(step.side_effects)
            ],
            *([f"costs {step.cost.amount} {step.cost.currency}"] if step.cost else []),
        ]
        lines.append(_item(step.step, step.undo, "; ".join(notes)))
    if plan.conflicts:
        lines.append("Changed since (kept unless overridden):")
        lines += [
            _item(
                c.step,
                c.undo,
                "; ".join(n for n in [BY_HOST if c.undone_by == "host" else "", c.message] if n),
            )
            for c in plan.conflicts
        ]
    if plan.not_reversible:
        lines.append("Cannot be undone:")
        lines += [_item(n.step, n.summary, _with_remedy(n)) for n in plan.not_reversible]
    if plan.blocked:
        lines.append("Kept because a later step that relied on it stays:")
        lines += [_item(b.step, b.undo, "relied on by " + ", ".join(b.kept_for)) for b in plan.blocked]
    if plan.expired:
        lines.append("Too late to undo:")
        lines += [_item(e.step, e.summary, f"window closed {e.undo_by}") for e in plan.expired]
    if plan.unresolved:
        lines.append("Unresolved (not checked, not undone):")
        lines += [_item(u.step, u.summary, u.reason) for u in plan.unresolved]
    if plan.already_reversed:
        lines.append("Already undone:")
        lines += [_item(a.step, a.summary, "") for a in plan.already_reversed]
    if plan.changed_nothing:
        lines.append("Changed nothing (nothing to undo, never run):")
        lines += [_item(c.step, c.summary, c.reason) for c in plan.changed_nothing]
    if plan.read_since:
        lines.append("Read since the change by other runs (tell them):")
        lines += [
            f"  - {r.agent}: {r.server}.{r.tool} at {r.time}   ({r.run}/{r.entry})" for r in plan.read_since
        ]
        lines.append(f"  {plan.unrecorded_memory}")
    return shown_lines(lines)  # each line made safe: a summary can't forge a step or a section


def _with_remedy(item: NotReversible) -> str:
    """Why a step can't be undone, and what a person could do instead (never done by itself)."""
    return f"{item.reason}; suggested remedy: {item.remedy}" if item.remedy else item.reason


def _item(step: int, text: str, note: str) -> str:
    """One plan item: ``  step 2  Cancel …   (note)``, as the Reversal Record's lines name it."""
    return f"  step {step}  {text}" + _note(note)


def _note(text: str) -> str:
    return f"   ({text})" if text else ""


def plan_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`ReversalPlan`."""
    return ReversalPlan.model_json_schema(by_alias=True, mode="serialization")
