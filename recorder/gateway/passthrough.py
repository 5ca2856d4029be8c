"""What the Recorder passes through besides tool calls: resources, resource templates and prompts
as each server published them, each read and get decided by the policy and journaled
(:mod:`.prompt_policy`), and unknown tool names, resource URIs and prompt names journaled as refused.

Resources keep their URIs (they name things in the server's world); prompts are renamed
``{server}_{prompt}`` like tools, so two servers' prompts cannot collide. Everything else the
agent sees (titles, descriptions, annotations, icons, ``_meta``) is what the server listed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_args

from fastmcp.exceptions import NotFoundError
from fastmcp.prompts import PromptResult
from fastmcp.resources import ResourceResult
from fastmcp.server.context import _get_client_log_level
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers.proxy import ProxyPrompt, ProxyResource, ProxyTemplate
from fastmcp.tools import ToolResult
from mcp import types as mcp_types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    LOG_LEVEL_META_KEY,
    METHOD_NOT_FOUND,
    LoggingLevel,
    LoggingMessageNotificationParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import PrivateAttr

from hatp_journal.recorder.gateway.prompt_policy import Asked, decided
from hatp_journal.recorder.gateway.unknown_asks import refuse_unknown

if TYPE_CHECKING:
    from fastmcp import Client, Context

    from hatp_journal.recorder.gateway.core import Recorder
    from hatp_journal.recorder.gateway.downstream import Downstream

T = TypeVar("T")

RECORDER_META_KEY = "hatp/recorder"
"""The Recorder's own ``_meta`` key: what a server publishes under it is not passed on."""


ProgressRelay = ProgressFnT

progress_relay: ContextVar[ProgressRelay | None] = ContextVar("progress_relay", default=None)
"""Where the server's progress notifications for the call being forwarded go: the agent's request."""


def agent_progress() -> ProgressRelay | None:
    """A relay to the agent's request being handled, if it asked for progress (a progressToken).

    The server's notifications arrive on the client's own task, outside the request: the session,
    token and request id are taken now.
    """
    try:
        request = get_context().request_context
    except RuntimeError:
        return None
    meta = request.meta if request is not None else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if request is None or not isinstance(token, str | int):
        return None
    session, request_id = request.session, request.request_id

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        await session.send_progress_notification(
            progress_token=token,
            progress=progress,
            total=total,
            message=message,
            related_request_id=request_id,
        )

    return relay


# send_log_message is deprecated with the logging capability (2026) but is still how a log reaches an
# agent that asks for it: its warning, from this module only, would be noise on the Recorder's stderr.
def _quiet_deprecation() -> None:
    """Ignore that warning; said again at each relay, since a caller (a test run) may reset the filters."""
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=re.escape(__name__) + "$")


_quiet_deprecation()

LogRelay = Callable[[LoggingMessageNotificationParams], Awaitable[None]]

_SEVERITY: dict[LoggingLevel, int] = {level: rank for rank, level in enumerate(get_args(LoggingLevel))}

log_relay: ContextVar[LogRelay | None] = ContextVar("log_relay", default=None)
"""Where a data-plane call's server log messages go (a call the library handles has its context)."""


def severity(level: LoggingLevel) -> int:
    """``level``'s rank: debug lowest, emergency highest."""
    return _SEVERITY[level]


def agent_log() -> LogRelay | None:
    """A relay of a server's log messages to the agent's request being handled, if there is one.

    The agent's level (``logging/setLevel``, kept on its connection by fastmcp) is honoured here, not
    sent on: a server's session is shared by every agent of the Recorder. Which levels the agent's
    request may receive at all (the 2026 protocol's per-request opt-in) is the mcp library's call.
    A call on the data plane brings its own relay (``log_relay``): its front knows the agent's level.
    """
    given = log_relay.get()
    if given is not None:
        return given
    try:
        context = get_context()
    except RuntimeError:
        return None
    request = context.request_context
    if request is None:
        return None
    session, request_id = request.session, request.request_id
    meta = request.meta if isinstance(request.meta, dict) else {}
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS and LOG_LEVEL_META_KEY not in meta:
        return None  # the 2026 protocol: a request that did not ask for log messages gets none
    lowest = _get_client_log_level(session) or context.fastmcp.client_log_level

    async def relay(message: LoggingMessageNotificationParams) -> None:
        if lowest is not None and _SEVERITY[message.level] < _SEVERITY[lowest]:
            return
        _quiet_deprecation()  # an identical filter replaces the last one: the list does not grow
        await session.send_log_message(
            message.level, message.data, message.logger, related_request_id=request_id
        )

    return relay


def published_meta(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """A listed component's ``_meta`` as its server published it, but for the Recorder's own key."""
    if not meta or RECORDER_META_KEY not in meta:
        return meta
    kept = {key: value for key, value in meta.items() if key != RECORDER_META_KEY}
    return kept or None


async def publish(recorder: Recorder, downstream: Downstream) -> None:
    """Add ``downstream``'s resources, templates and prompts (those it offers) to the Recorder."""
    client = downstream.client
    if client is None:
        return
    capabilities = client.server_capabilities  # either era: a 2026-era server has no initialize result
    if capabilities is None:
        return

    def connected() -> Client[Any]:
        return client

    if capabilities.resources is not None:
        for resource in await _offered(client.list_resources()):
            recorder.mcp.add_resource(
                JournaledResource.mirror(connected, resource, recorder, downstream.name)
            )
        for template in await _offered(client.list_resource_templates()):
            recorder.mcp.add_template(
                JournaledTemplate.mirror(connected, template, recorder, downstream.name)
            )
    if capabilities.prompts is not None:
        for prompt in await _offered(client.list_prompts()):
            recorder.mcp.add_prompt(ForwardPrompt.mirror(connected, prompt, recorder, downstream.name))


def instructions(downstreams: Iterable[Downstream]) -> str | None:
    """The servers' instructions for the agent, each under its server's name (their tools and
    prompts are renamed ``{server}_{name}`` here, which the agent is told)."""
    parts = []
    for downstream in downstreams:
        client = downstream.client
        said = client.instructions if client is not None else None
        if said and said.strip():
            renamed = f"(its tools and prompts are named {downstream.name}_<name> here)"
            parts.append(f"## {downstream.name} {renamed}\n\n{said.strip()}")
    return "\n\n".join(parts) or None


async def _offered(listing: Awaitable[list[Any]]) -> list[Any]:
    """What a listing returns; nothing if the server does not know the method.

    Servers announce ``resources`` and still answer "Method not found" to
    ``resources/templates/list`` (mcp-server-sqlite does): they simply have none.
    """
    try:
        return await listing
    except MCPError as error:
        if error.error.code != METHOD_NOT_FOUND:
            raise
        return []


class JournaledResource(ProxyResource):
    """One listed resource of a server; each read is decided, forwarded if allowed, and journaled."""

    _published: mcp_types.Resource | None = PrivateAttr(default=None)
    _recorder: Any = PrivateAttr(default=None)
    _server: str = PrivateAttr(default="")

    @classmethod
    def mirror(
        cls, client: Any, resource: mcp_types.Resource, recorder: Recorder, server: str
    ) -> JournaledResource:
        mirrored = cls(  # type: ignore[call-arg]  # the proxy's own __init__ takes client_factory
            client_factory=client,
            uri=resource.uri,
            name=resource.name,
            title=resource.title,
            description=resource.description,
            mime_type=resource.mime_type or "text/plain",
            meta=resource.meta,
        )
        mirrored._published, mirrored._recorder, mirrored._server = resource, recorder, server
        return mirrored

    def to_mcp_resource(self, **overrides: Any) -> mcp_types.Resource:
        """The resource exactly as its server listed it."""
        assert self._published is not None
        return self._published.model_copy(update={"meta": published_meta(self._published.meta)})

    async def read(self) -> ResourceResult:
        forward = partial(ProxyResource.read, self)
        return await decided(self._recorder, self._server, Asked.read(str(self.uri)), forward)


class JournaledTemplate(ProxyTemplate):
    """One resource template of a server; each read through it is decided like a listed one's."""

    _published: mcp_types.ResourceTemplate | None = PrivateAttr(default=None)
    _recorder: Any = PrivateAttr(default=None)
    _server: str = PrivateAttr(default="")

    @classmethod
    def mirror(
        cls, client: Any, template: mcp_types.ResourceTemplate, recorder: Recorder, server: str
    ) -> JournaledTemplate:
        mirrored = cls(  # type: ignore[call-arg]  # the proxy's own __init__ takes client_factory
            client_factory=client,
            uri_template=template.uri_template,
            name=template.name,
            title=template.title,
            description=template.description,
            mime_type=template.mime_type or "text/plain",
            parameters={},
            meta=template.meta,
        )
        mirrored._published, mirrored._recorder, mirrored._server = template, recorder, server
        return mirrored

    def to_mcp_template(self, **overrides: Any) -> mcp_types.ResourceTemplate:
        """The template exactly as its server listed it."""
        assert self._published is not None
        return self._published.model_copy(update={"meta": published_meta(self._published.meta)})

    async def create_resource(
        self, uri: str, params: dict[str, Any], context: Context | None = None
    ) -> ProxyResource:
        # The proxy reads the resource here, once; the resource it returns only hands the content on.
        forward = partial(ProxyTemplate.create_resource, self, uri, params, context)
        return await decided(self._recorder, self._server, Asked.read(uri), forward)


class ForwardPrompt(ProxyPrompt):
    """One prompt of a server, as ``{server}_{prompt}``. Getting it is decided and journaled like a
    call (:mod:`.prompt_policy`), and forwarded if the policy allows."""

    _published: mcp_types.Prompt | None = PrivateAttr(default=None)
    _recorder: Any = PrivateAttr(default=None)
    _server: str = PrivateAttr(default="")

    @classmethod
    def mirror(cls, client: Any, prompt: mcp_types.Prompt, recorder: Recorder, server: str) -> ForwardPrompt:
        mirrored = cls.from_mcp_prompt(client, prompt)
        renamed = cast(ForwardPrompt, mirrored.model_copy(update={"name": f"{server}_{prompt.name}"}))
        renamed._published, renamed._recorder, renamed._server = prompt, recorder, server
        return renamed

    async def render(self, arguments: dict[str, Any]) -> PromptResult:  # type: ignore[override]
        assert self._published is not None
        forward = partial(ProxyPrompt.render, self, arguments)
        asked = Asked.prompt(self._published.name, arguments)
        return await decided(self._recorder, self._server, asked, forward)

    def to_mcp_prompt(self, **overrides: Any) -> mcp_types.Prompt:
        """The prompt as its server listed it, under its name at the Recorder."""
        assert self._published is not None
        meta = published_meta(self._published.meta)
        return self._published.model_copy(update={"name": self.name, "meta": meta})


class UnknownToolsRefused(Middleware):
    """A call of a tool the Recorder does not publish (a typo, a binding tool) is journaled as refused,
    and so are a read of a URI no server listed and no template of a server matches, and a get of a
    prompt no server offers (:mod:`.unknown_asks`)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except NotFoundError:
            params = context.message
            arguments = params.arguments if isinstance(params.arguments, dict) else {}
            return await self.recorder.refuse_unknown_tool(params.name, arguments)

    async def on_read_resource(
        self,
        context: MiddlewareContext[mcp_types.ReadResourceRequestParams],
        call_next: CallNext[mcp_types.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        try:
            return await call_next(context)
        except NotFoundError:  # fastmcp's path screening of templated reads included
            raise await refuse_unknown(self.recorder, Asked.read(str(context.message.uri))) from None

    async def on_get_prompt(
        self,
        context: MiddlewareContext[mcp_types.GetPromptRequestParams],
        call_next: CallNext[mcp_types.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        try:
            return await call_next(context)
        except NotFoundError:  # only for a name nothing publishes: a server's own error is an MCPError
            asked = Asked.prompt(context.message.name, context.message.arguments)
            raise await refuse_unknown(self.recorder, asked) from None
