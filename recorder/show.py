"""One line per Run Record entry, for ``hatp-recorder show``: what happened, decided, and until when."""

from __future__ import annotations

from typing import Any

from hatp_journal.recorder.record import Entry


def entry_line(entry: Entry) -> str:
    """``eN <tab> kind <tab> what <tab> decision or status <tab> summary <tab> undoBy``."""
    body = entry.body
    describe = _DESCRIBE.get(entry.kind, _call)
    what, status, summary, until = describe(body)
    return "\t".join([entry.id, entry.kind, what, status, summary, until])


def _call(body: dict[str, Any]) -> tuple[str, str, str, str]:
    journal = _object(body.get("journal"))
    effect, undo, decision = (
        _object(journal.get("effect")),
        _object(journal.get("undo")),
        _object(body.get("decision")),
    )
    what = f"{body.get('server')}.{body.get('tool')}"
    if body.get("remedies"):
        what += f" (remedies {body['remedies']})"
    return what, str(decision.get("action", "")), str(effect.get("summary", "")), str(undo.get("undoBy", ""))


def _plan(body: dict[str, Any]) -> tuple[str, str, str, str]:
    plan = body.get("plan") or {}
    sizes = ", ".join(
        f"{len(plan.get(section) or [])} {section}" for section in ("steps", "conflicts", "notReversible")
    )
    return f"undo {plan.get('request', '')}", f"asks {body.get('approver', '')}", sizes, ""


def _decision(body: dict[str, Any]) -> tuple[str, str, str, str]:
    approval = body.get("approval") or {}
    counted = "counted" if body.get("counted") else f"not counted: {body.get('why', '')}"
    target = body.get("plan") or body.get("ask") or ""
    overrides = [o["override"]["step"] for o in body.get("overrides") or []]
    extra = f"overrides {', '.join(overrides)}" if overrides else ""
    return (
        f"on {target}",
        f"{approval.get('decision', '')} by {approval.get('by', '')} ({counted})",
        extra,
        "",
    )


def _intent(body: dict[str, Any]) -> tuple[str, str, str, str]:
    request = body.get("request") or {}
    return f"undo {body.get('step')}", "sending", f"ifVersion {request.get('ifVersion')}", ""


def _outcome(body: dict[str, Any]) -> tuple[str, str, str, str]:
    answer = body.get("answer") or {}
    status = answer.get("status") or f"failed: {body.get('failed', '')}"
    return f"undo {body.get('step')}", str(status), str(answer.get("message", "")), ""


def _reversal(body: dict[str, Any]) -> tuple[str, str, str, str]:
    counts = ", ".join(f"{n} {status}" for status, n in (body.get("counts") or {}).items())
    return f"of plan {body.get('plan')}", "done", counts, ""


def _halted(body: dict[str, Any]) -> tuple[str, str, str, str]:
    return f"of plan {body.get('plan')}", str(body.get("code", "")), str(body.get("reason", "")), ""


def _mail_failed(body: dict[str, Any]) -> tuple[str, str, str, str]:
    return f"mail for {body.get('notice')}", "not delivered", str(body.get("error", "")), ""


def _other(body: dict[str, Any]) -> tuple[str, str, str, str]:
    return str(body.get("ask") or body.get("entry") or ""), str(body.get("code", "")), "", ""


_DESCRIBE = {
    "plan": _plan,
    "decision": _decision,
    "undo-intent": _intent,
    "undo-outcome": _outcome,
    "reversal": _reversal,
    "undo-halted": _halted,
    "withdrawn": _other,
    "link": _other,
    "mail-failed": _mail_failed,
}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
