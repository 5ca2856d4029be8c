"""What the Recorder knows about a call before deciding it, built one way for the gateway and for
``explain`` (CLI and ``hatp_explain``), so that both decide the same call the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from hatp_journal.recorder.intake.journal_objects import bounded
from hatp_journal.recorder.policy import CallFacts
from hatp_journal.toolkit.wire import META_KEY, Declaration, Money

if TYPE_CHECKING:
    from hatp_journal.recorder.config import ServerConfig
    from hatp_journal.toolkit.signing import VerifyKey


class ListedTool(Protocol):
    """A tool as a server listed it: what deciding a call of it reads."""

    @property
    def name(self) -> str: ...
    @property
    def annotations(self) -> Any: ...
    @property
    def meta(self) -> dict[str, Any] | None: ...


class ListedServer(Protocol):
    """A server as a connect found it: a live :class:`~.downstream.Downstream`, or its tool list as
    kept from the last connect (:mod:`.kept_tools`), which ``explain`` decides from without starting it."""

    @property
    def name(self) -> str: ...
    @property
    def config(self) -> ServerConfig: ...
    @property
    def tools(self) -> Mapping[str, ListedTool]: ...
    @property
    def keys(self) -> Mapping[str, VerifyKey]: ...
    @property
    def journal_aware(self) -> bool: ...
    def agent_tools(self) -> list[Any]: ...


def tool_facts(downstream: ListedServer, tool: str) -> CallFacts:
    """What the host knows about every call of ``tool``, read once at connect.

    Keys are pinned before the tools are published and never change while the session lasts; a
    server without them is not journal-aware, and its declaration only counts where it makes a
    call worse (docs/policy.md, "Precedence").
    """
    return CallFacts.from_declaration(
        declaration_of(downstream, tool),
        server=downstream.name,
        tool=tool,
        at=datetime.min,  # each call sets its own time, amount and run
        server_keys=frozenset(downstream.keys),  # what requireVerified's attestations must name
        annotations=downstream.tools[tool].annotations,  # for the reversibility class
        trusted=downstream.config.trusted,
        journal_aware=downstream.journal_aware and bool(downstream.keys),
    )


def for_call(facts: CallFacts, arguments: dict[str, Any], now: datetime, run: str | None) -> CallFacts:
    """``facts`` of a tool made the facts of one call: its time, run, arguments and the money it
    says it moves."""
    amount = amount_of(arguments) if facts.charges else None
    return replace(facts, at=now, amount=amount, run=run, arguments=arguments)


def declaration_of(downstream: ListedServer, tool: str) -> Declaration | None:
    """The tool's HATP declaration as listed; anything unreadable is none (unknown, fail closed)."""
    meta = downstream.tools[tool].meta or {}
    raw = meta.get(META_KEY)
    if raw is None or bounded(raw) is not None:
        return None
    try:
        return Declaration.model_validate(raw)
    except ValidationError:
        return None


def amount_of(arguments: dict[str, Any]) -> Money | None:
    """The money a charging call says it moves (``amount`` and ``currency`` arguments)."""
    try:
        return Money(amount=str(arguments["amount"]), currency=str(arguments.get("currency", "USD")))
    except (KeyError, ValidationError):
        return None
