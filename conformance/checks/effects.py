"""protocol.md §3: what every mutating result carries: a journal object, a receipt, a true summary."""

from __future__ import annotations

from datetime import timedelta

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal._shared.durations import parse_window
from hatp_journal.conformance.checks.context import CheckContext
from hatp_journal.conformance.checks.outcome import NotTestable, expect, require
from hatp_journal.conformance.checks.registry import server_check
from hatp_journal.toolkit.signing import verify_call

CLOCK_SLACK = timedelta(seconds=5)
"""undoBy may differ from call time + window by this much (a server's two reads of its clock)."""


@server_check("J-3.1", applies="mutating")
async def every_result_carries_a_valid_journal_object(ctx: CheckContext) -> None:
    """The object parses, names this server and the declared kind; compensate: token, version, undoBy."""
    called = await ctx.call()
    journal, declared = called.journal, ctx.op.undo
    expect(
        journal.server == ctx.target.server,
        "server_mismatch",
        f"names {journal.server!r}, keys say {ctx.target.server!r}",
    )
    undo = require(journal.undo, "no_undo", "the journal object has no undo")
    expect(undo.kind == declared.kind, "kind_mismatch", f"declared {declared.kind}, result says {undo.kind}")
    receipt = require(journal.receipt, "no_receipt", "the journal object has no receipt")
    if declared.kind != "compensate":
        return
    called.token  # noqa: B018 - each property fails the check with its own problem code
    called.version  # noqa: B018
    said = {"via": undo.via, "sideEffects": undo.side_effects, "cost": undo.cost}
    wanted = {"via": declared.via, "sideEffects": declared.side_effects, "cost": declared.cost}
    expect(said == wanted, "terms_mismatch", f"the result says {said}, the declaration {wanted}")
    window = parse_window(require(declared.window, "no_window", "the declaration has no window"))
    expected = parse_wire_time(receipt.issued_at) + window
    expect(
        abs(called.undo_by - expected) <= CLOCK_SLACK,
        "undo_by_mismatch",
        f"undoBy {undo.undo_by} is not the call time {receipt.issued_at} + {declared.window}",
    )


@server_check("J-3.2", applies="mutating")
async def every_receipt_verifies_with_the_published_key(ctx: CheckContext) -> None:
    """The receipt signs this object, this tool and exactly the arguments sent."""
    called = await ctx.call()
    receipt = require(called.journal.receipt, "no_receipt", "the journal object has no receipt")
    expect(receipt.kid in ctx.target.keys, "unknown_kid", f"signed by {receipt.kid}, not a published key")
    expect(
        verify_call(called.raw, ctx.op.name, called.sample.arguments, ctx.target.keys),
        "receipt_invalid",
        "the receipt does not verify over the journal object, the tool and the arguments as sent",
    )


@server_check("J-3.3", applies="mutating")
async def the_summary_is_written_from_the_stored_change(ctx: CheckContext) -> None:
    """The sample's ``shows`` appear, its ``hides`` (the agent's spelling) don't; the effect is stored."""
    sample = await ctx.sample()
    if not sample.shows and not sample.hides:
        raise NotTestable(f"the sample of {ctx.op.name} gives no text to compare the summary with")
    called = await ctx.call(sample)
    effect = require(called.journal.effect, "no_summary", "the result carries no effect summary")
    missing = [text for text in sample.shows if text not in effect.summary]
    expect(not missing, "summary_misses_stored_change", f"{effect.summary!r} does not show {missing}")
    echoed = [text for text in sample.hides if text in effect.summary]
    expect(not echoed, "summary_from_arguments", f"{effect.summary!r} shows the agent's spelling {echoed}")
    if ctx.op.kind != "compensate":
        return
    stored = await ctx.state(called.resource)
    expect(
        stored.version == effect.version,
        "version_not_stored",
        f"effect.version {effect.version}, stored {stored.version}",
    )
    differs = {
        name: (value, stored.fields.get(name))
        for name, value in (effect.fields or {}).items()
        if name in stored.fields and stored.fields[name] != value
    }
    expect(
        not differs, "effect_not_stored", f"effect.fields differ from the store (effect, stored): {differs}"
    )


@server_check("J-3.4", applies="none")
async def a_none_result_says_why_and_carries_no_token(ctx: CheckContext) -> None:
    """``undo.kind: none``, a reason, a suggested remedy, no token."""
    journal = (await ctx.call()).journal
    expect(journal.compensation_token is None, "token_on_none", "a none result carries a compensation token")
    expect(bool(journal.reason and journal.reason.strip()), "no_reason", "a none result carries no reason")
    expect(bool(journal.remedy and journal.remedy.strip()), "no_remedy", "a none result suggests no remedy")
