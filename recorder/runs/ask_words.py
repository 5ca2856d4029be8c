"""What a person reads of an ask before deciding it: the call, its class in words, the arguments
it would be made with, whom it reaches, why it is an ask, what the server says it would do (its
effect preview, when it offers one) and until when.

Used by ``asks`` and ``show`` (each ask on one line; every cell is made safe by ``aligned``).
The arguments are shown whole, as recorded: they are exactly what an approval signs (the policy
has no redaction of its own; a server that must not show a value should not take it as an argument).
"""

from __future__ import annotations

import json
from typing import Any

from hatp_journal.recorder.runs.addresses import addresses
from hatp_journal.recorder.runs.asks import Ask
from hatp_journal.recorder.runs.class_words import class_words
from hatp_journal.recorder.runs.preview_words import preview_words


def arguments_text(arguments: Any) -> str:
    """The call's arguments as one line of JSON."""
    return json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)


def reaches(arguments: Any) -> str:
    """``reaches a@x, b@y``: the addresses the call names (who mail or an invitation would go to)."""
    found = list(dict.fromkeys(addresses(arguments)))
    return "reaches " + ", ".join(found) if found else ""


def ask_row(ask: Ask) -> list[str]:
    """One pending (readable) ask as ``asks`` lists it."""
    terms = ask.terms
    decision = terms.decision
    reasons = "; ".join(r.detail for r in decision.reasons) if decision is not None else ""
    return [
        ask.ref,
        f"{terms.server}.{terms.tool}",
        class_words(decision.rclass if decision is not None else None),
        arguments_text(terms.arguments),
        reaches(terms.arguments),
        reasons,
        preview_words(terms.preview),
        f"decide by {ask.decide_by}",
    ]
