"""protocol.md §4 for a call that wrote several resources (``effect.also``): each is put back, and an
outside edit of any one of them is the conflict named, with nothing changed."""

from __future__ import annotations

from hatp_journal.conformance.checks.context import Called, CheckContext
from hatp_journal.conformance.checks.outcome import NotTestable, expect, require
from hatp_journal.conformance.checks.registry import server_check
from hatp_journal.toolkit.wire import Sample, StateAnswer


async def _call(ctx: CheckContext, sample: Sample) -> tuple[Called, list[str]]:
    """A fresh call and every resource it wrote, ``effect.resource`` first; the effect must name the
    other resources the sample says the call writes (``Sample.also``), each with a version. A call
    that wrote one resource passes here: J-4.2 and J-4.3 check its undo."""
    called = await ctx.call(sample)
    effect = require(called.journal.effect, "no_effect", "the result carries no effect")
    named = [write.resource for write in effect.also or ()]
    expect(
        sorted(named) == sorted(sample.also or ()),
        "also_not_declared",
        f"the sample says the call writes {sorted(sample.also or ())} besides {called.resource}; "
        f"effect.also names {sorted(named)}",
    )
    unversioned = [write.resource for write in effect.also or () if write.version is None]
    expect(not unversioned, "also_without_version", f"effect.also names no version for {unversioned}")
    return called, [called.resource, *named]


@server_check("J-4.8", applies="compensate")
async def compensate_restores_every_resource_the_call_wrote(ctx: CheckContext) -> None:
    """After compensate each resource of the call reads as before it; versionLeft is stored on each."""
    sample = await ctx.sample()
    named = [sample.resource, *(sample.also or ())] if sample.resource else []
    before = {resource: await ctx.state(resource) for resource in named}
    called, resources = await _call(ctx, sample)
    if len(resources) == 1:
        return
    if not before:
        raise NotTestable(f"the sample of {ctx.op.name} does not name the resource the call changes")
    answer = ctx.answer(await ctx.session.compensate(called.token, called.version), "compensate")
    expect(
        answer.status == "done", "compensate_not_done", f"compensate answered {answer.status} {answer.code}"
    )
    left = {found.resource: found.version_left for found in answer.resources or ()}
    for resource in resources:
        after = await ctx.state(resource)
        was = before.get(resource)
        differs = _differs(was, after, set(sample.undo_may_differ)) if was else {"(created)": "exists"}
        expect(
            not differs, "not_restored", f"{resource} differs from before the call (before, after): {differs}"
        )
        expect(
            left.get(resource) == after.version,
            "wrong_version_left",
            f"{resource}: versionLeft {left.get(resource)}, stored {after.version}",
        )


@server_check("J-4.8", applies="compensate")
async def an_outside_edit_of_any_resource_is_a_conflict_naming_it(ctx: CheckContext) -> None:
    """An outside edit of each resource in turn: check and compensate answer UNDO_CONFLICT naming
    that resource, and no resource of the call changes."""
    sample = await ctx.sample()
    first, resources = await _call(ctx, sample)
    if len(resources) == 1:
        return
    offered = await ctx.session.samples(ctx.op.name)
    if not offered.outside_edit:
        raise NotTestable(f"the target offers no outside edit for {ctx.op.name}")
    for place, edited in enumerate(resources):
        called = first if place == 0 else (await _call(ctx, await ctx.sample()))[0]
        await ctx.session.touch(ctx.op.name, edited)
        kept = {resource: await ctx.state(resource) for resource in resources}
        for operation in ("check", "compensate"):
            reply = (
                await ctx.session.check(called.token)
                if operation == "check"
                else await ctx.session.compensate(called.token, called.version)
            )
            answer = ctx.answer(reply, operation)
            expect(
                (answer.status, answer.code) == ("conflict", "UNDO_CONFLICT"),
                "missed_conflict",
                f"{operation} after an outside edit of {edited} answered {answer.status} {answer.code}",
            )
            conflicted = [found.resource for found in answer.resources or () if found.status == "conflict"]
            expect(
                conflicted == [edited] and edited in answer.message,
                "conflict_not_named",
                f"{operation} names {conflicted or 'no resource'} in conflict ({answer.message!r}); "
                f"{edited} was edited",
            )
        for resource in resources:
            now = await ctx.state(resource)
            expect(now == kept[resource], "conflict_changed_state", f"{resource} changed by a refused undo")


def _differs(before: StateAnswer, after: StateAnswer, ignored: set[str]) -> dict[str, object]:
    return {
        name: (before.fields.get(name), after.fields.get(name))
        for name in sorted(set(before.fields) | set(after.fields))
        if name not in ignored and before.fields.get(name) != after.fields.get(name)
    }
