"""The agent-facing tool that mirrors one downstream tool and forwards its calls through the Recorder,
and what the mcp library tells about the request being handled (its ``_meta``, rounds, progress)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.server.dependencies import get_context
from fastmcp.tools import Tool, ToolResult
from mcp.types import Tool as McpTool
from mcp.types import ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import PrivateAttr

from hatp_journal.recorder.gateway import passthrough
from hatp_journal.recorder.runs.waiting import Progress

if TYPE_CHECKING:
    from hatp_journal.recorder.gateway.core import Recorder


class ForwardTool(Tool):
    """An agent-facing tool that forwards to one downstream tool through the Recorder."""

    _recorder: Recorder | None = PrivateAttr(default=None)
    _server: str = PrivateAttr(default="")
    _tool: str = PrivateAttr(default="")
    _published: McpTool | None = PrivateAttr(default=None)

    @classmethod
    def for_downstream(
        cls, recorder: Recorder, server: str, tool: Any, annotations: ToolAnnotations
    ) -> ForwardTool:
        """Mirror ``tool`` of ``server`` as ``{server}_{tool}`` with its schema and meta, and the
        host's ``annotations`` (``host_hints.py``), not the server's."""
        forward = cls(
            name=f"{server}_{tool.name}",
            title=tool.title,
            description=tool.description,
            parameters=tool.input_schema,
            annotations=annotations,
            meta=tool.meta,
        )
        forward._recorder, forward._server, forward._tool = recorder, server, tool.name
        # The Recorder answers every call itself and offers no MCP tasks: no ``execution`` (absent is
        # "forbidden"), whatever the server offers; a call is made as a plain call (docs/recorder.md).
        forward._published = tool.model_copy(update={"annotations": annotations, "execution": None})
        return forward

    def to_mcp_tool(self, **overrides: Any) -> McpTool:
        """The tool as its server listed it (title, output schema, ``_meta``...), but for its name
        and the hints, which are the host's."""
        assert self._published is not None
        meta = passthrough.published_meta(self._published.meta)
        return self._published.model_copy(update={"name": self.name, "meta": meta})

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Forward through the Recorder."""
        assert self._recorder is not None
        return await self._recorder.handle(self._server, self._tool, arguments)


def request_meta() -> Any:
    """The ``_meta`` of the request being handled through the mcp library, if any."""
    try:
        request = get_context().request_context
    except RuntimeError:
        return None
    return request.meta if request is not None else None


def library_rounds() -> tuple[Any, Any, Any] | None:
    """(client capabilities, ``requestState``, ``inputResponses``) of the 2026-era request being
    handled through the mcp library; None for a handshake-era one (or none at all)."""
    try:
        context = get_context()
    except RuntimeError:
        return None
    request = context.request_context
    if request is None or request.session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    capabilities = request.session.client_capabilities
    responses = context.input_responses
    dumped = (
        None
        if responses is None
        else {k: v.model_dump(mode="json", by_alias=True, exclude_none=True) for k, v in responses.items()}
    )
    return capabilities, context.request_state, dumped


def library_progress() -> Progress | None:
    """How to send progress for the request being handled through the mcp library, if any."""
    try:
        return get_context().report_progress
    except RuntimeError:
        return None
