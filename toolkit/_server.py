"""Putting a :class:`Journal` on a FastMCP server: tools, declarations, binding tools.

Journaled tools run in a worker thread (the store is synchronous). Every
failure becomes an *error result* that carries a stable code and its data,
since a raised ``ToolError`` reaches the client as bare text.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from mcp import types as mt
from mcp.types import ToolAnnotations
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from hatp_journal.toolkit._arguments import InvalidArguments, validate_arguments
from hatp_journal.toolkit._spec import OperationSpec
from hatp_journal.toolkit._testing_surface import ConformanceSurface
from hatp_journal.toolkit.errors import DeclarationError, ErrorCode, JournalError
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import (
    CHECK_TOOL,
    CLOCK_TOOL,
    COMPENSATE_TOOL,
    KEYS_TOOL,
    META_KEY,
    PREVIEW_TOOL,
    RECORDER_META_KEY,
    SAMPLES_TOOL,
    STATE_TOOL,
    TOUCH_TOOL,
    CallBinding,
    CheckRequest,
    CompensateRequest,
    ErrorBody,
    Override,
    PublicKey,
    Receipt,
    UndoAnswer,
)

if TYPE_CHECKING:
    from hatp_journal.toolkit._journal import Journal

# The arguments exactly as the client sent them: the receipt signs their digest.
_RAW_ARGUMENTS: ContextVar[Mapping[str, Any] | None] = ContextVar("raw_arguments", default=None)

_log = logging.getLogger(__name__)


def publish(journal: Journal, mcp: FastMCP) -> None:
    """Register every journaled tool of ``journal`` and the binding tools on ``mcp``."""
    for spec in journal.operations.values():
        mcp.tool(
            _runner(journal, spec),
            name=spec.name,
            description=inspect.getdoc(spec.function),
            annotations=hints_for(spec),
            meta={META_KEY: journal.declaration(spec.name).wire()},
        )
    _publish_binding_tools(journal, mcp)
    if journal.testing:
        _publish_testing_tools(journal, mcp)
    mcp.add_middleware(_ArgumentsFirst(journal))


def hints_for(spec: OperationSpec) -> ToolAnnotations:
    """Standard MCP hints consistent with the declaration (protocol.md §2)."""
    if spec.read:
        return ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=spec.kind is None,
            open_world_hint=spec.open_world,
        )
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=spec.kind != "compensate",
        idempotent_hint=spec.idempotent,
        open_world_hint=spec.open_world,
    )


def error_result(code: ErrorCode, message: str, data: Mapping[str, Any] | None = None) -> ToolResult:
    """An error result carrying a stable code and its data in content and ``_meta``."""
    body = ErrorBody(code=code, message=message, data=to_jsonable_python(dict(data or {}))).wire()
    return ToolResult(
        content=f"{code.value}: {message}",
        structured_content=body,
        meta={META_KEY: {"error": body}},
        is_error=True,
    )


def answer_result(answer: UndoAnswer) -> ToolResult:
    """A check/compensate answer; an error result when it carries a code."""
    body = answer.wire()
    text = f"{answer.code.value}: {answer.message}" if answer.code else answer.message
    return ToolResult(
        content=text or answer.status,
        structured_content=body,
        meta={META_KEY: body},
        is_error=answer.code is not None and answer.operation == "compensate",
    )


def _runner(journal: Journal, spec: OperationSpec) -> Callable[..., Any]:
    async def run(**arguments: Any) -> ToolResult:
        raw = _RAW_ARGUMENTS.get()
        if raw is None:
            raw = to_jsonable_python(arguments)
        try:
            recorder, call = _recorder_key(), _call_binding()
        except ValueError as error:
            return error_result(ErrorCode.INVALID_ARGUMENTS, str(error), {"tool": spec.name})
        return await _in_thread(partial(_invoke, journal, spec.name, raw, recorder, call))

    signature = inspect.signature(spec.function)
    parameters = [p for p in signature.parameters.values() if p.name != spec.tx_param]
    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=ToolResult
    )
    annotations = inspect.get_annotations(spec.function, eval_str=True)
    run.__annotations__ = {p.name: annotations.get(p.name, Any) for p in parameters}
    run.__annotations__["return"] = ToolResult
    run.__name__ = spec.name
    return run


def _announcement() -> Any:
    """The request's ``_meta["hatp/recorder"]``, if any."""
    try:
        request = get_context().request_context
    except RuntimeError:
        return None
    meta = request.meta if request is not None else None
    return meta.get(RECORDER_META_KEY) if isinstance(meta, Mapping) else None


def _call_binding() -> CallBinding | None:
    """The call a Recorder said this request is (``_meta["hatp/recorder"]["call"]``), if it said.

    Raises ``ValueError`` for one that is not ``{run, id}``: a receipt signed without the binding
    asked for could be moved to any call of any run.
    """
    announced = _announcement()
    if not isinstance(announced, Mapping) or announced.get("call") is None:
        return None
    try:
        return CallBinding.model_validate(announced["call"])
    except ValueError as error:
        raise ValueError(f"_meta[{RECORDER_META_KEY!r}].call is not {{run, id}}") from error


def _recorder_key() -> VerifyKey | None:
    """The key a Recorder announced in the request's ``_meta["hatp/recorder"]``, if any.

    Raises ``ValueError`` for an announcement that is not a published key: minting an unbound
    token for a caller that meant to bind it would hand out a token anyone could use.
    """
    announced = _announcement()
    if announced is None:
        return None
    try:
        return VerifyKey.from_wire(PublicKey.model_validate(announced["key"]))
    except (TypeError, KeyError, ValueError) as error:
        raise ValueError(f"_meta[{RECORDER_META_KEY!r}] does not carry a published Ed25519 key") from error


def _invoke(
    journal: Journal,
    tool: str,
    arguments: Mapping[str, Any],
    recorder: VerifyKey | None = None,
    call: CallBinding | None = None,
) -> ToolResult:
    try:
        invocation = journal.invoke(tool, arguments, recorder=recorder, call=call)
    except JournalError as error:
        return error_result(error.code, error.message, {**error.data, "tool": tool})
    except DeclarationError as error:
        return error_result(ErrorCode.TOOL_FAILED, str(error), {"tool": tool})
    except Exception as error:  # noqa: BLE001 - a bug in the tool: say so, with a code, and log it
        # Unlike TOOL_FAILED (the tool refused and changed nothing), nobody knows what a crash left:
        # the store rolls back only if it had not committed, and nothing outside the store rolls back.
        _log.exception("%s raised", tool)
        message = f"{tool} raised {type(error).__name__}: {error}"
        return error_result(ErrorCode.TOOL_CRASHED, message, {"tool": tool})
    result = to_jsonable_python(invocation.result)
    return ToolResult(
        content=result if result is not None else "",
        structured_content=result if isinstance(result, dict) else None,
        meta={META_KEY: invocation.journal.wire()},
    )


async def _in_thread(function: Callable[[], ToolResult]) -> ToolResult:
    return await anyio.to_thread.run_sync(function)


def _publish_binding_tools(journal: Journal, mcp: FastMCP) -> None:
    binding = {META_KEY: {"binding": True}}

    async def check(token: str) -> ToolResult:
        """Dry-run an undo: would compensating this token work right now? Changes nothing."""
        return answer_result(await anyio.to_thread.run_sync(journal.check, token))

    async def compensate(
        token: str,
        ifVersion: str,
        override: Override | None = None,
        requestId: str | None = None,
        proof: Receipt | None = None,
        ifVersions: dict[str, str] | None = None,
    ) -> ToolResult:
        """Run the stored undo of a token if the resource is still at ifVersion (and each other
        resource the call wrote at its version in ifVersions, or as the call left it)."""
        request = CompensateRequest(
            token=token,
            if_version=ifVersion,
            override=override,
            request_id=requestId,
            proof=proof,
            if_versions=ifVersions,
        )
        return answer_result(await anyio.to_thread.run_sync(journal.compensate, request))

    async def keys() -> ToolResult:
        """The public keys that verify this server's receipts."""
        body = journal.keys().wire()
        return ToolResult(structured_content=body, meta={META_KEY: body})

    async def preview(tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Dry-run a tool call and return the effect it would have (protocol.md §10)."""
        try:
            effect = await anyio.to_thread.run_sync(journal.preview, tool, arguments)
        except JournalError as error:
            return error_result(error.code, error.message, {**error.data, "tool": tool})
        except KeyError:
            return error_result(ErrorCode.TOOL_FAILED, f"no journaled tool named {tool!r}")
        body = effect.wire()
        return ToolResult(structured_content=body, meta={META_KEY: {"preview": body}})

    read = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
    mcp.tool(check, name=CHECK_TOOL, annotations=read, meta=binding)
    mcp.tool(
        compensate,
        name=COMPENSATE_TOOL,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
        meta=binding,
    )
    mcp.tool(keys, name=KEYS_TOOL, annotations=read, meta=binding)
    if journal.previews:
        mcp.tool(preview, name=PREVIEW_TOOL, annotations=read, meta=binding)


def _publish_testing_tools(journal: Journal, mcp: FastMCP) -> None:
    """The test-only surface (``docs/conformance.md``): only in testing mode, never for agents."""
    surface = ConformanceSurface(journal)
    testing = {META_KEY: {"testing": True}}

    async def run(function: Callable[[], BaseModel]) -> ToolResult:
        try:
            answer = await anyio.to_thread.run_sync(function)
        except JournalError as error:
            return error_result(error.code, error.message, error.data)
        body = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        return ToolResult(structured_content=body, meta={META_KEY: body})

    async def samples(tool: str | None = None) -> ToolResult:
        """Fresh sample arguments for each declared operation, and whether an outside edit exists."""
        return await run(partial(surface.samples, tool))

    async def touch(tool: str, resource: str) -> ToolResult:
        """Change a resource as someone outside the agent's run would (to provoke a conflict)."""
        return await run(partial(surface.touch, tool, resource))

    async def state(tool: str, resource: str) -> ToolResult:
        """A resource as the tool's compensation reads it now; changes nothing."""
        return await run(partial(surface.state, tool, resource))

    async def clock(advanceSeconds: int = 0) -> ToolResult:
        """Move the server's clock forward (to test expiry); answers the time it shows now."""
        return await run(partial(surface.clock, advanceSeconds))

    for function, name in (
        (samples, SAMPLES_TOOL),
        (touch, TOUCH_TOOL),
        (state, STATE_TOOL),
        (clock, CLOCK_TOOL),
    ):
        mcp.tool(function, name=name, meta=testing)


_BINDING_REQUESTS: dict[str, type[BaseModel]] = {
    CHECK_TOOL: CheckRequest,
    COMPENSATE_TOOL: CompensateRequest,
}


class _ArgumentsFirst(Middleware):
    """Validate a journaled tool's arguments before FastMCP does, so errors carry a code."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        name = context.message.name
        model = self.journal.argument_model(name) or _BINDING_REQUESTS.get(name)
        if model is None:
            return await call_next(context)
        arguments = dict(context.message.arguments or {})
        try:
            validate_arguments(name, model, arguments)
        except InvalidArguments as error:
            return error_result(error.code, error.message, {**error.data, "tool": name})
        token = _RAW_ARGUMENTS.set(arguments)
        try:
            return await call_next(context)
        finally:
            _RAW_ARGUMENTS.reset(token)
