"""One line per Run Record entry, for ``hatp-recorder show``: what happened, decided, and until when.

Bodies are read through ``record.entry_bodies``: an entry that does not fit its kind's model (or a
call whose verified journal object does not fit the wire format) reads ``unreadable`` with its code,
and the other lines are unaffected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hatp_journal._shared.text import shown
from hatp_journal.recorder.cli.columns import aligned
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import (
    AskBody,
    Body,
    CallBody,
    DecisionBody,
    HaltedBody,
    IntentBody,
    MailDeferredBody,
    MailDeliveredBody,
    MailFailedBody,
    MentionBody,
    NoticeBody,
    OutcomeBody,
    PlanBody,
    RefusedBody,
    ReversalBody,
    Unreadable,
    read_body,
    read_journal,
)
from hatp_journal.recorder.runs.ask_words import arguments_text, reaches
from hatp_journal.recorder.runs.class_words import class_words
from hatp_journal.recorder.runs.preview_words import preview_words

Line = tuple[str, str, str, str]
_SECTIONS = ("steps", "conflicts", "notReversible")
_NAMED_BY = {"prompts/get": "name", "resources/read": "uri"}
"""The argument that says what a prompt get or a resource read asked for (the ``tool`` of its
entry is the MCP method: ``recorder/gateway/prompt_policy.py``, not imported: it loads the gateway)."""


def entry_lines(entries: Sequence[Entry]) -> list[str]:
    """``show`` as people read it: one aligned line per entry (id, kind, what, status, summary, until)."""
    rows = []
    for entry in entries:
        what, status, summary, until = _described(entry)
        rows.append([entry.id, entry.kind, what, status, summary, f"until {until}" if until else ""])
    return aligned(rows)


def entry_line(entry: Entry) -> str:
    """``eN <tab> kind <tab> what <tab> decision or status <tab> summary <tab> undoBy``."""
    what, status, summary, until = _described(entry)
    return "\t".join(shown(cell) for cell in [entry.id, entry.kind, what, status, summary, until])


def _described(entry: Entry) -> Line:
    return describe(read_body(entry))


def _ask(body: AskBody) -> Line:
    """A call held for a person: the call, its class in words, and the arguments it would be made with."""
    rclass = body.decision.rclass if body.decision is not None else None
    status = " ".join(w for w in ("asks", body.approver, class_words(rclass)) if w)
    said = (arguments_text(body.arguments), reaches(body.arguments), preview_words(body.preview))
    summary = "; ".join(t for t in said if t)
    return f"{body.server}.{body.tool}", status, summary, body.decide_by


def describe(body: Body | Unreadable) -> Line:
    """(what, decision or status, summary, undoBy) of one body as read."""
    if isinstance(body, Unreadable):
        return "unreadable", body.code, body.detail, ""
    if isinstance(body, CallBody):
        return _call(body)
    if isinstance(body, AskBody):
        return _ask(body)
    if isinstance(body, PlanBody):
        plan = body.plan
        counted = (plan.steps, plan.conflicts, plan.not_reversible)
        sizes = ", ".join(f"{len(items)} {name}" for items, name in zip(counted, _SECTIONS, strict=True))
        return f"undo {plan.request}", f"asks {body.approver}", sizes, ""
    if isinstance(body, DecisionBody):
        return _decision(body)
    if isinstance(body, IntentBody):
        return f"undo {body.step}", "sending", f"ifVersion {body.request.if_version}", ""
    if isinstance(body, OutcomeBody):
        if body.answer is None:
            return f"undo {body.step}", f"failed: {body.failed}", "", ""
        return f"undo {body.step}", body.answer.status, body.answer.message, ""
    if isinstance(body, ReversalBody):
        counts = ", ".join(f"{n} {status}" for status, n in body.counts.items())
        return f"of plan {body.plan}", "done", counts, ""
    if isinstance(body, HaltedBody):
        return f"of plan {body.plan}", body.code, body.reason, ""
    if isinstance(body, MailDeliveredBody):
        return f"mail for {body.notice}", "delivered", ", ".join(body.to or []), ""
    if isinstance(body, MailDeferredBody):
        return f"mail for {body.notice}", f"deferred ({body.code})", body.error, f"next at {body.retry_at}"
    if isinstance(body, MailFailedBody):
        return f"mail for {body.notice}", "not delivered", body.error, ""
    if isinstance(body, NoticeBody):
        return f"step {body.step}" if body.step else "", "", body.summary or "", body.undo_by or ""
    if isinstance(body, MentionBody):
        return body.ask or body.entry or "", body.code, "", ""
    if isinstance(body, RefusedBody):
        return _refused(body)
    return "", "", "", ""


def _asked(server: str | None, tool: str, arguments: Any) -> str:
    """``server.tool`` (no server: nothing the Recorder publishes serves it), and for a prompt get
    or a resource read the prompt's name or the URI asked for."""
    what = f"{server}.{tool}" if server else tool
    member = _NAMED_BY.get(tool)
    named = _text(_member(arguments, member)) if member is not None else ""
    return f"{what} {named}" if named else what


def _refused(body: RefusedBody) -> Line:
    """What was asked and not forwarded, its code (and the class it was decided by), and why."""
    decision = body.decision
    rclass = decision.rclass if decision is not None else None
    reasons = [r.detail for r in decision.reasons] if decision is not None else []
    kept = body.arguments_refused
    said = [
        *reasons,
        body.why,
        kept.reason if kept is not None else "",
        f"ask {body.ask}" if body.ask else "",
    ]
    status = f"{body.code} {rclass or ''}".strip()
    return _asked(body.server, body.tool, body.arguments), status, "; ".join(t for t in said if t), ""


def _call(body: CallBody) -> Line:
    what = _asked(body.server, body.tool, body.arguments)
    if body.remedies:
        what += f" (remedies {body.remedies})"
    action = body.decision.action if body.decision is not None else ""
    verdict = body.decision.reversibility if body.decision is not None else None
    rclass = verdict.rclass or "" if verdict is not None else ""
    action = f"{action} {rclass}".strip()  # the reversibility class next to the decision
    if body.intake is None or body.intake.status != "verified":
        # Not vouched for by its server: its words are shown as they came, where they are text.
        effect = _member(body.journal, "effect")
        undo = _member(body.journal, "undo")
        summary = _text(_member(effect, "summary"))
        host = body.host_undo
        if not summary and _text(_member(host, "summary")):
            summary = f"{_member(host, 'summary')} (undone by the host, not the server)"
        return what, action, summary, _text(_member(undo, "undoBy"))
    journal = read_journal(body.journal)
    if isinstance(journal, Unreadable):
        return what, action, f"unreadable: {journal.text()}", ""
    summary = journal.effect.summary if journal.effect is not None else ""
    undo_by = journal.undo.undo_by if journal.undo is not None else None
    return what, action, summary, undo_by or ""


def _decision(body: DecisionBody) -> Line:
    counted = "counted" if body.counted else f"not counted: {body.why}"
    target = body.plan or body.ask or ""
    overrides = [signed.override.step for signed in body.overrides]
    extra = f"overrides {', '.join(overrides)}" if overrides else ""
    return f"on {target}", f"{body.approval.decision} by {body.approval.by} ({counted})", extra, ""


def _member(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
