"""protocol.md §2 and the binding (§4): declarations, MCP hints, binding tools and keys."""

from __future__ import annotations

import secrets

from pydantic import ValidationError

from hatp_journal._shared.durations import parse_window
from hatp_journal.conformance.checks.context import CheckContext
from hatp_journal.conformance.checks.outcome import CheckFailed, expect
from hatp_journal.conformance.checks.registry import server_check
from hatp_journal.toolkit.wire import CHECK_TOOL, COMPENSATE_TOOL, KEYS_TOOL, META_KEY, Declaration


@server_check("J-2.1", applies="tool")
async def every_tool_declares_its_undo_terms(ctx: CheckContext) -> None:
    """A declaration that parses, with a positive window for compensate and a reason for none."""
    raw = ctx.op.raw_declaration
    expect(raw is not None, "no_declaration", f'{ctx.op.name} has no _meta["{META_KEY}"] in tools/list')
    try:
        declaration = Declaration.model_validate(raw)
    except ValidationError as error:
        raise CheckFailed("invalid_declaration", str(error.errors()[:1])) from None
    undo = declaration.undo
    expect(undo is not None or declaration.read, "no_undo_kind", "declares neither an undo kind nor read")
    if undo is None:
        return
    if undo.kind == "compensate":
        expect(not declaration.read, "read_with_compensate", "a read has nothing to compensate")
        expect(undo.window is not None, "no_window", "compensate declares no window")
        assert undo.window is not None
        try:
            seconds = int(parse_window(undo.window).total_seconds())
        except ValueError:
            raise CheckFailed("bad_window", f"window {undo.window!r} is not an ISO-8601 duration") from None
        expect(seconds > 0, "bad_window", f"window {undo.window!r} is not positive")
        expect(
            undo.window_seconds in (None, seconds),
            "windows_disagree",
            f"window {undo.window} is {seconds} s but windowSeconds says {undo.window_seconds}",
        )
    else:
        expect(
            bool(declaration.reason and declaration.reason.strip()), "no_reason", "none declares no reason"
        )


@server_check("J-2.2", applies="tool")
async def mcp_hints_agree_with_the_declaration(ctx: CheckContext) -> None:
    """Hints as MCP reads them (absent: readOnly false, destructive true, openWorld true)."""
    hints = ctx.op.tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    destructive = not hints or hints.destructive_hint is None or bool(hints.destructive_hint)
    open_world = not hints or hints.open_world_hint is None or bool(hints.open_world_hint)
    kind, declaration = ctx.op.kind, ctx.op.declaration
    read = declaration is not None and declaration.read
    said = f"readOnlyHint={read_only}, destructiveHint={destructive}, openWorldHint={open_world}"
    if kind == "read" or (kind == "none" and read):
        expect(read_only, "read_only_hint_mismatch", f"a declared read must say readOnlyHint=true ({said})")
        expect(not destructive or read_only, "destructive_hint_mismatch", said)
    if kind == "none" and read:
        expect(open_world, "open_world_hint_mismatch", f"a read that cannot be taken back discloses ({said})")
    if kind == "compensate":
        expect(not read_only, "read_only_hint_mismatch", f"an undoable change is not read-only ({said})")
        expect(
            not destructive,
            "destructive_hint_mismatch",
            f"an undoable change says destructiveHint=false ({said})",
        )
    if kind == "none" and not read:
        expect(not read_only, "read_only_hint_mismatch", f"an irreversible change is not read-only ({said})")
        expect(destructive, "destructive_hint_mismatch", f"an irreversible change is destructive ({said})")


@server_check("J-4.7", applies="server")
async def the_binding_tools_and_keys_are_published(ctx: CheckContext) -> None:
    """check/compensate/keys are listed and marked as binding; keys name their bytes."""
    for name in (CHECK_TOOL, COMPENSATE_TOOL, KEYS_TOOL):
        tool = ctx.target.tools.get(name)
        expect(tool is not None, "missing_binding_tool", f"{name} is not in tools/list")
        assert tool is not None
        marked = (tool.meta or {}).get(META_KEY)
        expect(
            isinstance(marked, dict) and marked.get("binding") is True,
            "binding_not_marked",
            f'{name} lacks _meta["{META_KEY}"] = {{"binding": true}}',
        )
    expect(ctx.target.keys_problem is None, "bad_keys_answer", ctx.target.keys_problem or "")
    expect(bool(ctx.target.keys), "no_keys", "hatp_journal_keys publishes no key")


@server_check("J-4.6", applies="server")
async def an_unknown_token_is_refused(ctx: CheckContext) -> None:
    """A token the server never issued: check says unknown_token, compensate refuses."""
    token = "ctk_" + secrets.token_urlsafe(32)
    checked = ctx.answer(await ctx.session.check(token), "check")
    expect(
        (checked.status, checked.code) == ("unknown_token", "UNDO_UNKNOWN_TOKEN"),
        "check_not_unknown",
        f"check of an unknown token answered {checked.status} {checked.code}",
    )
    reply = await ctx.session.compensate(token, "v1")
    expect(reply.error, "compensate_not_refused", "compensate of an unknown token is not an error result")
    refused = ctx.answer(reply, "compensate")
    expect(
        refused.code == "UNDO_UNKNOWN_TOKEN",
        "wrong_code",
        f"compensate of an unknown token answered {refused.status} {refused.code}, not UNDO_UNKNOWN_TOKEN",
    )
