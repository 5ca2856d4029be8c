"""The email server's hooks for the conformance suite's test-only surface (``docs/conformance.md``).

Published only in testing mode (``HATP_JOURNAL_TESTING=1``). Samples name a recipient twice and
pad the subject, which the store keeps once and trimmed.
"""

from __future__ import annotations

import secrets

from hatp_journal.toolkit import Tx
from hatp_journal.toolkit.testing import Sample, outside_edit_for, sample_for

from .store import Draft, draft_fields, draft_uri, new_draft, set_draft_status

COLLEAGUE = "eve@acme.com"


@sample_for("send_email")
def welcome_note(tx: Tx) -> Sample:
    """A welcome note to the buyer (delivered for real: run the server against a mail sink)."""
    return Sample(
        arguments={
            "to": ["buyer@globex.com", " buyer@globex.com"],
            "subject": "  Welcome to Acme  ",
            "body": "Welcome aboard.",
        },
        # The summary names who received it (protocol.md §0), each once; the subject is in the result.
        shows=["Email to buyer@globex.com"],
        hides=["buyer@globex.com,", "  Welcome"],
    )


@sample_for("draft_email")
def follow_up_draft(tx: Tx) -> Sample:
    """A follow-up draft to Dana."""
    return Sample(
        arguments={"to": ["dana@acme.com", " dana@acme.com "], "subject": "  Follow-up  ", "body": "Notes."},
        shows=["to dana@acme.com: Follow-up"],
        hides=["dana@acme.com,", "  Follow-up"],
    )


@outside_edit_for("draft_email")
def eve_edits_the_draft(resource: str, tx: Tx) -> None:
    """Eve changes the draft's subject in her mail client."""
    draft = _draft(resource, tx)
    draft.subject += " (edited)"
    tx.session.add(draft)
    draft.record_change(draft_fields(draft), by=COLLEAGUE, at=tx.now)


@sample_for("delete_draft")
def an_old_draft(tx: Tx) -> Sample:
    """Delete a draft stored here first; the summary names its subject, which only the store knows."""
    draft = new_draft(
        f"dr_{secrets.token_hex(6)}", ["dana@acme.com"], "Quarterly numbers", "Draft.", COLLEAGUE, tx.now
    )
    tx.session.add(draft)
    return Sample(arguments={"draft_id": draft.id}, resource=draft_uri(draft.id), shows=["Quarterly numbers"])


@outside_edit_for("delete_draft")
def eve_restores_the_draft(resource: str, tx: Tx) -> None:
    """Eve brings the deleted draft back herself."""
    set_draft_status(tx.session, _draft(resource, tx), "draft", COLLEAGUE, tx.now)


def _draft(resource: str, tx: Tx) -> Draft:
    draft = tx.session.get(Draft, resource.rsplit("/", 1)[-1])
    if draft is None:
        raise LookupError(f"no draft behind {resource}")
    return draft


TESTING_HOOKS = (welcome_note, follow_up_draft, eve_edits_the_draft, an_old_draft, eve_restores_the_draft)
"""Pass these to ``Journal.register`` with the tools."""
