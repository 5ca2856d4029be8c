"""The Recorder's own tools for the agent, under the reserved prefix ``hatp_``.

``hatp_checkpoint``, ``hatp_list_changes``, ``hatp_explain`` and ``hatp_request_undo`` let an agent
mark a point in its run, see what it changed, learn why a call would be held, and ask for its own
work to be undone. They change nothing in a tool server: a requested undo is a Reversal Plan that
waits for a person, exactly as one asked for with ``hatp-recorder plan``. Each call is journaled as
a ``note`` entry (``tool``, ``arguments``, ``outcome``): it is no step of the run, so step numbers
stay those of the calls that reached a tool server. The policy's ``agentTools: false`` turns them off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from fastmcp.exceptions import ValidationError
from fastmcp.tools import FunctionTool, ToolResult
from pydantic import Field, PrivateAttr
from pydantic import ValidationError as PydanticValidationError

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal.recorder.changes.steps import Step, steps_of
from hatp_journal.recorder.config import ConfigError
from hatp_journal.recorder.gateway.agent_answers import ANNOTATIONS, OUTPUT_SCHEMAS, said
from hatp_journal.recorder.gateway.arguments import check_arguments
from hatp_journal.recorder.gateway.explain import ExplainError, explain_listed, for_agent
from hatp_journal.recorder.gateway.replies import own_answer, tool_result
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import CallBody, NoteBody, read_as, reversed_entries
from hatp_journal.recorder.record.written_bodies import NoteOutcome, NoteRecord
from hatp_journal.recorder.undo.actions import ask_for_plan, kept_steps, load_directory
from hatp_journal.recorder.undo.approval import PlanAsk, find_plan
from hatp_journal.recorder.undo.errors import UndoError
from hatp_journal.recorder.undo.planner import UndoRequest
from hatp_journal.recorder.undo.servers import UndoServers

if TYPE_CHECKING:
    from hatp_journal.recorder.gateway.core import Recorder

PREFIX = "hatp_"
"""Reserved for the Recorder's own tools: no server's tools may be published under it."""

AGENT_SERVER = "hatp"
"""The ``server`` of an agent tool's note entry."""


class AgentToolError(Exception):
    """A refused agent tool call: a stable ``code`` and one line."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


def reserved_clash(server_names: list[str]) -> str | None:
    """Why these server names can't sit beside the agent tools (their tools would share the prefix)."""
    for name in server_names:
        if f"{name}_".startswith(PREFIX):
            return (
                f"server {name!r}: names starting with {AGENT_SERVER!r} are reserved for the Recorder's tools"
            )
    return None


def publish(recorder: Recorder) -> None:
    """Add the agent tools to the Recorder's MCP server (unless the policy turns them off)."""
    if not recorder.policy.agent_tools:
        return
    clash = reserved_clash(list(recorder.config.servers))
    if clash is not None:
        raise ConfigError(clash)
    tools = AgentTools(recorder)
    for name, body in (
        ("checkpoint", tools.checkpoint),
        ("list_changes", tools.list_changes),
        ("explain", tools.explain),
        ("request_undo", tools.request_undo),
    ):
        tool = JournaledTool.from_function(
            body, name=PREFIX + name, output_schema=OUTPUT_SCHEMAS[name], annotations=ANNOTATIONS[name]
        )
        assert isinstance(tool, JournaledTool)  # from_function builds the class it is called on
        tool._refuse = partial(tools.bad_arguments, name)
        recorder.mcp.add_tool(tool)


class JournaledTool(FunctionTool):
    """An agent tool whose arguments, when they fail its schema, are journaled as a refused
    ``note`` (``BAD_ARGUMENTS``) and answered as a refusal, as every other outcome of it is."""

    _refuse: Callable[[dict[str, Any], str], Awaitable[ToolResult]] | None = PrivateAttr(default=None)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            return await super().run(arguments)
        except ValidationError as error:
            if self._refuse is None:
                raise
            return await self._refuse(arguments, _what_failed(error))


def _what_failed(error: ValidationError) -> str:
    """The first few fields a validation refused, and why (the library's own message otherwise)."""
    cause = error.__cause__
    if isinstance(cause, PydanticValidationError):
        said = [
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in cause.errors()[:3]
        ]
        return "; ".join(said)
    return str(error)[:300]


class AgentTools:
    """The tools' bodies; each one's answer is journaled, refused or not."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def checkpoint(
        self, label: Annotated[str, Field(min_length=1, max_length=200, description="A name for this point")]
    ) -> ToolResult:
        """Mark this point of the run, to list or undo what was changed after it (a later mark of
        the same label moves it)."""
        after = len(self._steps())
        return await self._answer(
            "checkpoint", {"label": label}, lambda: {"label": label, "afterStep": after}
        )

    async def list_changes(
        self,
        since: Annotated[
            str | int | None,
            Field(description="A checkpoint's label, or a step number: list only the changes after it"),
        ] = None,
    ) -> ToolResult:
        """What this run changed in tool servers, newest last, with whether and until when each
        change can be undone."""
        arguments = {} if since is None else {"since": since}
        return await self._answer("list_changes", arguments, lambda: self._changes(since))

    async def explain(
        self,
        server: Annotated[str, Field(description="The server's name at the Recorder")],
        tool: Annotated[str, Field(description="The tool's name at its server")],
        arguments: Annotated[dict[str, Any] | None, Field(description="The call's arguments")] = None,
    ) -> ToolResult:
        """How a call would be classified and what the policy would decide, without making it:
        the same answer as ``hatp-recorder explain``."""
        asked: dict[str, Any] = {"server": server, "tool": tool}
        if arguments is not None:
            asked["arguments"] = arguments
        return await self._answer("explain", asked, lambda: self._explain(server, tool, arguments or {}))

    async def request_undo(
        self,
        from_step: Annotated[int | None, Field(description="Undo this step and every later one")] = None,
        checkpoint: Annotated[str | None, Field(description="Undo everything after this checkpoint")] = None,
        steps: Annotated[list[int] | None, Field(description="Undo just these steps")] = None,
    ) -> ToolResult:
        """Ask for this run's changes to be undone. A person approves or denies the Reversal Plan;
        nothing is undone until then."""
        asked = {
            k: v
            for k, v in (("fromStep", from_step), ("checkpoint", checkpoint), ("steps", steps))
            if v is not None
        }
        request = self._undo_request(from_step, checkpoint, steps)
        return await self._answer_async("request_undo", asked, request)

    async def bad_arguments(self, tool: str, arguments: dict[str, Any], problem: str) -> ToolResult:
        """Journal a call whose arguments the tool's schema refused (as a refused note), and say why."""
        code, said = "BAD_ARGUMENTS", f"the arguments do not fit the tool: {problem}"
        checked = check_arguments(arguments, self.recorder.config.recorder.max_arguments_bytes)
        if checked.refusal is not None:  # not even journaled as given: the note keeps none of them
            code, said, arguments = checked.refusal.code, checked.refusal.message(), {}

        async def refuse() -> dict[str, Any]:
            raise AgentToolError(code, said)

        return await self._answer_async(tool, arguments, refuse)

    # -- what each tool does ------------------------------------------------------

    def _steps(self) -> list[Step]:
        return steps_of(self._entries())

    def _entries(self) -> list[Entry]:
        return self.recorder.store.entries(self.recorder.own_run())

    def _checkpoint(self, label: str) -> int:
        """The number of steps before the latest checkpoint called ``label``."""
        notes = [read_as(NoteBody, e) for e in self._entries() if e.kind == "note"]
        found = [
            n.outcome.after_step
            for n in notes
            if isinstance(n, NoteBody)
            and (n.server, n.tool) == (AGENT_SERVER, "checkpoint")
            and _label(n.arguments) == label
            and n.outcome is not None
            and n.outcome.after_step is not None
        ]
        if not found:
            raise AgentToolError("UNKNOWN_CHECKPOINT", f"this run has no checkpoint {label!r}")
        return int(found[-1])

    def _changes(self, since: str | int | None) -> dict[str, Any]:
        after = 0  # the changes listed are the steps numbered above this
        if isinstance(since, int):
            after = since
        elif since is not None:
            after = int(since) if since.isdigit() else self._checkpoint(since)
        entries = self._entries()
        reversed_ids = reversed_entries(entries)
        requested = _requested(self.recorder, entries)
        changes = [
            _change(step, reversed_ids, requested, self.recorder.clock())
            for step in steps_of(entries)
            if step.number > after and step.kind not in ("read", "no-effect") and not _answered_error(step)
        ]
        return {"run": self.recorder.own_run(), "changes": changes}

    def _explain(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        downstream = self.recorder.downstreams.get(server)
        if downstream is None:
            known = ", ".join(sorted(self.recorder.downstreams))
            raise AgentToolError("UNKNOWN_SERVER", f"no server {server!r} (known: {known})")
        try:
            explained = explain_listed(
                downstream, self.recorder.policy, tool, arguments, self.recorder.clock()
            )
        except ExplainError as error:
            raise AgentToolError(error.code, error.message) from None
        return for_agent(explained)  # only what the agent may learn of the policy (docs/policy.md)

    def _undo_request(self, from_step: int | None, checkpoint: str | None, steps: list[int] | None) -> Any:
        async def plan() -> dict[str, Any]:
            named = [x for x in (from_step, checkpoint, steps) if x is not None]
            if len(named) != 1:
                raise AgentToolError("BAD_UNDO_REQUEST", "name one of from_step, checkpoint or steps")
            start = self._checkpoint(checkpoint) + 1 if checkpoint is not None else from_step
            request = UndoRequest(from_step=start, steps=tuple(steps or ()))
            return await self._plan(request)

        return plan

    async def _plan(self, request: UndoRequest) -> dict[str, Any]:
        recorder = self.recorder
        run = recorder.own_run()
        entries = self._entries()
        count = len(steps_of(entries))
        try:
            request.chosen(count)
            principal = recorder.store.run(run).principal
            async with AsyncExitStack() as stack:
                servers = UndoServers(recorder.config, recorder.store, stack, connected=recorder.downstreams)
                ask = await ask_for_plan(
                    recorder.store,
                    recorder.policy,
                    load_directory(recorder.config),
                    servers,
                    run,
                    request,
                    by=principal,
                    now=recorder.clock(),
                )
        except UndoError as error:
            raise AgentToolError(error.code, error.message, error.details) from None
        except ConfigError as error:
            raise AgentToolError("NO_DIRECTORY", str(error)) from None
        plan = ask.plan
        kept = kept_steps(plan)
        return {
            "status": "pending_approval",
            "plan": ask.ref,
            "request": plan.request,
            "approver": plan.undo_authority,
            "decideBy": ask.body.decide_by,
            "steps": [{"step": s.step, "undo": s.undo} for s in plan.steps],
            "conflicts": [{"step": c.step, "reason": c.message or "changed since"} for c in plan.conflicts],
            "notReversible": [
                {"step": n.step, "summary": n.summary, "reason": n.reason, "remedy": n.remedy}
                for n in plan.not_reversible
            ],
            **{section: items for section, items in kept.items() if section != "notReversible"},
            "message": "A person decides on this plan; nothing is undone until they approve it.",
        }

    # -- journaling ---------------------------------------------------------------

    async def _answer(self, tool: str, arguments: dict[str, Any], work: Any) -> ToolResult:
        async def run() -> dict[str, Any]:
            return dict(work())

        return await self._answer_async(tool, arguments, run)

    async def _answer_async(self, tool: str, arguments: dict[str, Any], work: Any) -> ToolResult:
        """Run ``work``, journal the call and its outcome as a note, answer the agent."""
        recorder = self.recorder
        run = recorder.own_run()

        def note(outcome: NoteOutcome) -> NoteRecord:
            return NoteRecord.model_construct(
                agent=recorder.config.recorder.agent,
                principal=recorder.config.recorder.principal,
                server=AGENT_SERVER,
                tool=tool,
                arguments=arguments,
                arguments_digest=check_arguments(
                    arguments, recorder.config.recorder.max_arguments_bytes
                ).digest,
                outcome=outcome,
            )

        try:
            result = await work()
        except AgentToolError as error:
            entry = await recorder.append_note(run, note(NoteOutcome(status="refused", code=error.code)))
            refusal = {**error.details, "code": error.code, "message": error.message, "entry": entry.id}
            text = said(f"{error.code}: {error.message}", refusal)
            return tool_result(own_answer(text, refusal, is_error=True))
        entry = await recorder.append_note(run, note(NoteOutcome(status="ok", **_journaled(tool, result))))
        answer = {**result, "entry": entry.id}
        return tool_result(own_answer(said(_summary(tool, result), answer), answer, is_error=False))


def _label(arguments: Any) -> Any:
    return arguments.get("label") if isinstance(arguments, dict) else None


def _journaled(tool: str, result: dict[str, Any]) -> dict[str, Any]:
    """What a tool's note keeps of its answer: the checkpoint's place, the plan's ref."""
    if tool == "checkpoint":
        return {"afterStep": result["afterStep"]}
    if tool == "request_undo":
        return {"plan": result["plan"]}
    return {}


def _summary(tool: str, result: dict[str, Any]) -> str:
    """The answer's essentials in words (step numbers, what to do next), for a host that hands the
    model only ``content``."""
    if tool == "checkpoint":
        label = result["label"]
        return (
            f"Checkpoint {label!r} set after step {result['afterStep']}. To undo what this run changes "
            f"after it, call hatp_request_undo with checkpoint {label!r}."
        )
    if tool == "list_changes":
        return changes_sentence(result["changes"])
    if tool == "request_undo":
        return plan_sentence(result)
    return f"{result.get('text', '')}\n{_NEXT.get(str(result.get('action')), '')}".strip()


_NEXT = {
    "allow": "Next: the call would be made at once, without asking anyone.",
    "ask": "Next: call it, then call again with the same arguments once a person approved it "
    "(it is not made until then).",
}
"""What an agent does next, by what the policy would decide (explain)."""


def changes_sentence(changes: list[dict[str, Any]]) -> str:
    """``2 changes: step 1 crm.update_deal (reversible until …); step 3 …`` and what to do next."""
    if not changes:
        return "No changes in tool servers to list."
    items = []
    for change in changes:
        state = str(change["undo"])
        if state == "reversible" and change.get("undoBy"):
            state += f" until {change['undoBy']}"
        elif state == "requested":
            state += f" in plan {change.get('plan')}"
        items.append(f"step {change['step']} {change['server']}.{change['tool']} ({state})")
    count = len(changes)
    return (
        f"{count} change{'s' * (count != 1)}: {'; '.join(items)}. To undo, call hatp_request_undo with "
        "from_step or steps."
    )


def plan_sentence(result: dict[str, Any]) -> str:
    """What a filed plan undoes, what it keeps and why, and that a person decides first."""
    undone = ", ".join(str(s["step"]) for s in result["steps"]) or "none"
    text = (
        f"Undo plan {result['plan']} ({result['request']}) waits for {result['approver']} to decide by "
        f"{result['decideBy']}; nothing is undone until then. Steps it undoes: {undone}."
    )
    kept = [
        f"step {item['step']} ({words}: {item.get('reason')})"
        for section, words in _KEPT.items()
        for item in result.get(section, [])
    ]
    if kept:
        text += " Not undone: " + "; ".join(kept) + "."
    return text + " Call hatp_list_changes later to see which steps were undone."


_KEPT = {
    "conflicts": "changed since, a person may override",
    "notReversible": "cannot be undone",
    "blocked": "kept",
    "expired": "too late",
    "unresolved": "unresolved",
    "alreadyReversed": "already undone",
    "changedNothing": "changed nothing, never run",
}


def _pending_plans(recorder: Recorder, entries: list[Entry]) -> list[PlanAsk]:
    """This run's plans still waiting for a decision (``entries`` are the run's)."""
    run = recorder.own_run()
    plans = [find_plan(recorder.store, f"{run}/{e.id}") for e in entries if e.kind == "plan"]
    return [plan for plan in plans if plan.state == "pending"]


def _requested(recorder: Recorder, entries: list[Entry]) -> dict[str, str]:
    """Entry -> the pending plan that would undo it."""
    found: dict[str, str] = {}
    for pending in _pending_plans(recorder, entries):
        for step in pending.plan.steps:
            found[step.entry] = pending.ref
    return found


def _answered_error(step: Step) -> bool:
    """Whether a server that knows nothing of undo answered the call with an error: no effect to
    list (a call that never got an answer may have had one, and so may a journal-aware tool's
    error its journal calls unresolved: both stay listed)."""
    call = read_as(CallBody, step.entry)
    outcome = call.outcome if isinstance(call, CallBody) else None
    return step.kind == "unknown" and outcome is not None and outcome.status == "error"


def _change(step: Step, reversed_ids: set[str], requested: dict[str, str], now: Any) -> dict[str, Any]:
    """One change as the agent sees it: what, and whether it can still be undone (never the token)."""
    change: dict[str, Any] = {
        "step": step.number,
        "entry": step.id,
        "server": step.server,
        "tool": step.tool,
        "summary": step.summary,
    }
    if step.undo_by is not None:
        change["undoBy"] = step.undo_by
    if step.id in reversed_ids:
        change["undo"] = "reversed"
    elif step.id in requested:
        change["undo"] = "requested"
        change["plan"] = requested[step.id]
    elif step.kind == "compensate":
        expired = step.undo_by is not None and parse_wire_time(step.undo_by) <= now
        change["undo"] = "expired" if expired else "reversible"
    elif step.kind == "none":
        change["undo"] = "not-reversible"
    else:
        change["undo"] = "unknown"
        if step.reason:
            change["reason"] = step.reason
    return change
