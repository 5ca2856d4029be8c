"""protocol.md §4: check and compensate, against a real store, with outside edits and a moved clock."""

from __future__ import annotations

import secrets
from datetime import timedelta

from hatp_journal.conformance.checks.context import CheckContext
from hatp_journal.conformance.checks.outcome import NotTestable, expect
from hatp_journal.conformance.checks.registry import server_check
from hatp_journal.toolkit.wire import StateAnswer


@server_check("J-4.1", applies="compensate")
async def check_changes_nothing_and_leaves_the_token_usable(ctx: CheckContext) -> None:
    """Two checks answer ok and change nothing; compensate still works afterwards."""
    called = await ctx.call()
    before = await ctx.state(called.resource)
    for attempt in ("first", "second"):
        reply = await ctx.session.check(called.token)
        expect(not reply.error, "check_is_error", f"the {attempt} check is an error result: {reply.code}")
        answer = ctx.answer(reply, "check")
        expect(
            answer.status == "ok",
            "check_not_ok",
            f"the {attempt} check answered {answer.status} {answer.code}",
        )
        expect(
            answer.version_found == called.version,
            "wrong_version_found",
            f"check found {answer.version_found}",
        )
        after = await ctx.state(called.resource)
        expect(after == before, "check_changed_state", _changed(before, after))
    done = ctx.answer(await ctx.session.compensate(called.token, called.version), "compensate")
    expect(
        done.status == "done",
        "token_unusable_after_check",
        f"compensate after check: {done.status} {done.code}",
    )


@server_check("J-4.2", applies="compensate")
async def compensate_restores_the_state_before_the_call(ctx: CheckContext) -> None:
    """After compensate the resource reads as before the call (a created one is gone)."""
    sample = await ctx.sample()
    before = await ctx.state(sample.resource) if sample.resource else None
    called = await ctx.call(sample)
    reply = await ctx.session.compensate(called.token, called.version)
    answer = ctx.answer(reply, "compensate")
    expect(
        answer.status == "done" and not reply.error,
        "compensate_not_done",
        f"compensate answered {answer.status} {answer.code}: {answer.message}",
    )
    after = await ctx.state(called.resource)
    if called.created:
        expect(not after.exists, "created_resource_remains", f"{called.resource} still exists after the undo")
        return
    if before is None or sample.resource != called.resource:
        raise NotTestable(f"the sample of {ctx.op.name} does not name the resource the call changed")
    ignored = set(sample.undo_may_differ)
    differs = {
        name: (before.fields.get(name), after.fields.get(name))
        for name in sorted(set(before.fields) | set(after.fields))
        if name not in ignored and before.fields.get(name) != after.fields.get(name)
    }
    expect(
        after.exists and not differs,
        "not_restored",
        f"fields differ from before the call (before, after): {differs}",
    )
    expect(
        answer.version_left == after.version,
        "wrong_version_left",
        f"versionLeft {answer.version_left}, stored {after.version}",
    )


@server_check("J-4.3", applies="compensate")
async def a_changed_resource_gives_a_conflict_and_no_change(ctx: CheckContext) -> None:
    """After an outside edit, check says conflict and compensate refuses, leaving the edit."""
    offered = await ctx.session.samples(ctx.op.name)
    if not offered.outside_edit:
        raise NotTestable(f"the target offers no outside edit for {ctx.op.name}")
    called = await ctx.call()
    edited = await ctx.session.touch(ctx.op.name, called.resource)
    expect(
        edited.version != called.version, "edit_not_versioned", "the outside edit left the version unchanged"
    )
    checked = ctx.answer(await ctx.session.check(called.token), "check")
    expect(
        (checked.status, checked.code) == ("conflict", "UNDO_CONFLICT"),
        "check_missed_conflict",
        f"check after an outside edit answered {checked.status} {checked.code}",
    )
    reply = await ctx.session.compensate(called.token, called.version)
    answer = ctx.answer(reply, "compensate")
    expect(
        answer.status != "done",
        "compensated_over_change",
        f"compensate ran over the outside edit ({edited.changed_by}, {edited.version})",
    )
    expect(
        reply.error and answer.code == "UNDO_CONFLICT",
        "wrong_code",
        f"answered {answer.status} {answer.code}",
    )
    after = await ctx.state(called.resource)
    expect(after == edited, "conflict_changed_state", _changed(edited, after))


@server_check("J-4.4", applies="compensate")
async def an_expired_window_gives_undo_expired_and_no_change(ctx: CheckContext) -> None:
    """Just past undoBy (the target's clock moved), check and compensate answer UNDO_EXPIRED."""
    called = await ctx.call()
    now = await ctx.session.clock()
    await ctx.session.clock(max(1, int((called.undo_by - now + timedelta(seconds=1)).total_seconds())))
    checked = ctx.answer(await ctx.session.check(called.token), "check")
    expect(
        (checked.status, checked.code) == ("expired", "UNDO_EXPIRED"),
        "check_missed_expiry",
        f"check after undoBy answered {checked.status} {checked.code}",
    )
    before = await ctx.state(called.resource)
    reply = await ctx.session.compensate(called.token, called.version)
    answer = ctx.answer(reply, "compensate")
    expect(
        answer.status != "done", "compensated_after_window", f"compensate ran after undoBy {called.undo_by}"
    )
    expect(
        reply.error and answer.code == "UNDO_EXPIRED", "wrong_code", f"answered {answer.status} {answer.code}"
    )
    after = await ctx.state(called.resource)
    expect(after == before, "expired_undo_changed_state", _changed(before, after))


@server_check("J-4.5", applies="compensate")
async def a_repeated_compensate_returns_the_first_outcome(ctx: CheckContext) -> None:
    """A retry, and a new attempt with another requestId, change nothing and answer done again."""
    called = await ctx.call()
    first = ctx.answer(await ctx.session.compensate(called.token, called.version), "compensate")
    expect(
        first.status == "done",
        "compensate_not_done",
        f"the first compensate answered {first.status} {first.code}",
    )
    undone = await ctx.state(called.resource)
    attempts = {"a retry": None, "a new attempt": "conformance-" + secrets.token_hex(4)}
    for attempt, request_id in attempts.items():
        again = ctx.answer(
            await ctx.session.compensate(called.token, called.version, request_id), "compensate"
        )
        expect(
            (again.status, again.code, again.version_left) == (first.status, first.code, first.version_left),
            "repeat_differs",
            f"{attempt} answered {again.status} {again.code} {again.version_left}, "
            f"the first {first.status} {first.version_left}",
        )
        now = await ctx.state(called.resource)
        expect(now == undone, "repeat_changed_state", f"{attempt}: {_changed(undone, now)}")
    checked = ctx.answer(await ctx.session.check(called.token), "check")
    expect(checked.status == "done", "check_not_done", f"check after compensate answered {checked.status}")


def _changed(before: StateAnswer, after: StateAnswer) -> str:
    fields = {
        name: (before.fields.get(name), after.fields.get(name))
        for name in sorted(set(before.fields) | set(after.fields))
        if before.fields.get(name) != after.fields.get(name)
    }
    return (
        f"version {before.version} → {after.version}, by {after.changed_by}, fields (before, after): {fields}"
    )
