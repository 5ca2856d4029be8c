"""Reversibility classes R0–R4: how recoverable one call is, and the rule that says so.

R0 no effect, R1 restorable, R2 compensable at a known bounded cost, R3 hard to recover (access,
credentials, availability, physical state), R4 irreversible (a disclosure, unrecoverable
destruction). The host decides, never the server: a host registry entry outranks anything a server
says about itself; a server's journal declaration sets the class only when the host trusts the
server (``trusted = true``) and pinned its keys, its MCP hints only when the host trusts it; any
other claim of a server can only raise the class; nothing: R4 (docs/policy.md, "Precedence").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from hatp_journal.toolkit.wire import Declaration, WireModel

RClass = Literal["R0", "R1", "R2", "R3", "R4"]
CLASSES: tuple[RClass, ...] = ("R0", "R1", "R2", "R3", "R4")

Evidence = dict[str, str | int | bool | None]

CLASS_MEANINGS: dict[RClass, str] = {
    "R0": "no effect: nothing changes outside the agent's working context",
    "R1": "restorable: fully restorable with ordinary effort, and nobody outside saw it",
    "R2": "compensable: it can't be restored, but a known fix exists at a bounded cost",
    "R3": "hard to recover: it needs a person or out-of-band recovery (access, credentials, availability)",
    "R4": "irreversible: a disclosure, unrecoverable destruction, or a consequence that can't be recalled",
}
"""Each class in words (docs/policy.md, "Reversibility classes")."""


class ClassSource:
    """Stable names of the rules that give a class; the Run Record and tests match these."""

    DECLARED_READ = "declaration-read"
    DECLARED_COMPENSATE = "declaration-compensate"
    DECLARED_SIDE_EFFECTS = "declaration-compensate-side-effects"
    DECLARED_VIA_UI = "declaration-via-ui"
    DECLARED_NONE = "declaration-none"
    REGISTRY = "registry"
    REGISTRY_ARGUMENTS = "registry-argument-rule"
    HINT_READ_ONLY = "mcp-hint-read-only"
    UNKNOWN = "unknown"
    OVERRIDE = "override"
    OVERRIDE_REFUSED = "override-refused"


class ClassOrigin:
    """Who said what a class rests on: the server about itself, or the host (its registry, its
    people's overrides, its default). Every class decision in the Run Record names one."""

    SERVER_DECLARATION = "server-declaration"
    SERVER_HINTS = "server-hints"
    HOST_REGISTRY = "host-registry"
    HOST_OVERRIDE = "host-override"
    HOST_DEFAULT = "host-default"


_ORIGIN_OF_RULE: dict[str, str] = {
    ClassSource.DECLARED_READ: ClassOrigin.SERVER_DECLARATION,
    ClassSource.DECLARED_COMPENSATE: ClassOrigin.SERVER_DECLARATION,
    ClassSource.DECLARED_SIDE_EFFECTS: ClassOrigin.SERVER_DECLARATION,
    ClassSource.DECLARED_VIA_UI: ClassOrigin.SERVER_DECLARATION,
    ClassSource.DECLARED_NONE: ClassOrigin.SERVER_DECLARATION,
    ClassSource.REGISTRY: ClassOrigin.HOST_REGISTRY,
    ClassSource.REGISTRY_ARGUMENTS: ClassOrigin.HOST_REGISTRY,
    ClassSource.HINT_READ_ONLY: ClassOrigin.SERVER_HINTS,
    ClassSource.UNKNOWN: ClassOrigin.HOST_DEFAULT,
    ClassSource.OVERRIDE: ClassOrigin.HOST_OVERRIDE,
    ClassSource.OVERRIDE_REFUSED: ClassOrigin.HOST_OVERRIDE,
}


class ClassVerdict(WireModel):
    """A call's class, the rule that produced it, who said it (``source``, a :class:`ClassOrigin`),
    a sentence why, and what it was checked against.

    ``disclosure``: the call discloses something (or the server says it cannot be taken back);
    no override lowers it.
    """

    rclass: RClass = Field(alias="class")
    rule: str
    source: str = ""
    rationale: str
    evidence: Evidence = Field(default_factory=dict)
    disclosure: bool = False

    @model_validator(mode="after")
    def _source_of_rule(self) -> ClassVerdict:
        # Entries journaled before sources were named read back with the source their rule implies.
        if not self.source:
            object.__setattr__(self, "source", _ORIGIN_OF_RULE.get(self.rule, ClassOrigin.HOST_DEFAULT))
        return self


def rank(cls: RClass) -> int:
    """0 for R0 … 4 for R4."""
    return CLASSES.index(cls)


def higher(one: RClass, other: RClass) -> RClass:
    """The less recoverable of two classes."""
    return one if rank(one) >= rank(other) else other


def verdict(
    cls: RClass, rule: str, rationale: str, *, disclosure: bool = False, **evidence: Any
) -> ClassVerdict:
    """Shorthand for :class:`ClassVerdict`."""
    return ClassVerdict.model_validate(
        {"class": cls, "rule": rule, "rationale": rationale, "evidence": evidence, "disclosure": disclosure}
    )


@dataclass(frozen=True)
class Hints:
    """A tool's MCP annotations as the server sent them; ``None``: not said (MCP's defaults are
    not assumed: an unsaid ``openWorldHint`` is not ``false``)."""

    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None

    @classmethod
    def of(cls, annotations: Any) -> Hints | None:
        """From an ``mcp.types.ToolAnnotations`` (or anything with those attributes); None: none."""
        if annotations is None:
            return None

        def flag(name: str, wire_name: str) -> bool | None:
            # MCP SDK 2 spells them snake_case; older SDKs and plain objects as on the wire.
            value = getattr(annotations, name if hasattr(annotations, name) else wire_name, None)
            return value if isinstance(value, bool) else None  # a non-boolean hint says nothing

        return cls(
            flag("read_only_hint", "readOnlyHint"),
            flag("destructive_hint", "destructiveHint"),
            flag("open_world_hint", "openWorldHint"),
        )

    def wire(self) -> dict[str, Any]:
        """The hints as evidence, MCP's spelling."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "openWorldHint": self.open_world,
        }


def declared_class(declaration: Declaration | None) -> ClassVerdict | None:
    """The class a toolkit declaration gives (docs/policy.md has the table); None: it gives none."""
    if declaration is None:
        return None
    undo = declaration.undo
    if undo is None:
        if declaration.read:
            return verdict("R0", ClassSource.DECLARED_READ, "declared read-only")
        return None
    if undo.kind == "none":
        # Only the server knows what cannot be taken back: its "none" is treated as a disclosure.
        said = declaration.reason or "declared as not undoable"
        return verdict("R4", ClassSource.DECLARED_NONE, said, disclosure=True, reason=declaration.reason)
    if undo.via == "ui":
        return verdict(
            "R2", ClassSource.DECLARED_VIA_UI, "the undo replays through a user interface", via="ui"
        )
    if undo.side_effects or undo.cost is not None or declaration.charges:
        said = "the undo is a compensation others notice, or that costs money"
        return verdict(
            "R2",
            ClassSource.DECLARED_SIDE_EFFECTS,
            said,
            sideEffects="; ".join(undo.side_effects) or None,
            cost=None if undo.cost is None else f"{undo.cost.amount} {undo.cost.currency}",
            charges=declaration.charges,
        )
    return verdict("R1", ClassSource.DECLARED_COMPENSATE, "declared undoable, with no side effects or cost")


def hinted_class(hints: Hints | None, trusted: bool) -> ClassVerdict | None:
    """R0 for a read-only, closed-world tool of a trusted server; otherwise no class from hints.

    Hints are the server's own claims (MCP calls them untrusted): from a server the host has not
    marked trusted they change nothing, and a destructive or open-world hint keeps a tool off R0.
    """
    if hints is None or not trusted or hints.read_only is not True:
        return None
    if hints.destructive is True or hints.open_world is not False:
        return None
    return verdict(
        "R0",
        ClassSource.HINT_READ_ONLY,
        "a trusted server marks it read-only and closed-world",
        **hints.wire(),
    )


def unknown_class(hints: Hints | None, trusted: bool) -> ClassVerdict:
    """R4: nothing classifies the call. Says which hints were there and why they did not count."""
    if hints is None:
        said = "nothing classifies this tool: no declaration, no registry entry, no hints"
    elif not trusted:
        said = "nothing classifies this tool; its hints come from a server the host does not trust"
    else:
        said = "nothing classifies this tool; its hints do not make it a closed-world read"
    return verdict("R4", ClassSource.UNKNOWN, said, trusted=trusted, **(hints.wire() if hints else {}))


@dataclass(frozen=True)
class ServerTrust:
    """How far the host believes what a server says about itself (recorder.toml and the pins).

    ``trusted``: ``trusted = true`` in recorder.toml; ``keyed``: the server is journal-aware and
    its receipt keys are pinned. A journal declaration counts only with both; MCP hints with
    ``trusted``.
    """

    trusted: bool = False
    keyed: bool = False

    @property
    def declaration_counts(self) -> bool:
        """Whether the server's journal declaration may set (and so lower) the class."""
        return self.trusted and self.keyed

    def why_not(self) -> str:
        """Why a declaration does not count, in words."""
        if not self.trusted:
            return "the host does not trust this server (trusted = false in recorder.toml)"
        return "the server has no pinned keys (it is not journal-aware)"


def classify(
    declared: ClassVerdict | None,
    registered: ClassVerdict | None,
    hints: Hints | None,
    trust: ServerTrust,
) -> ClassVerdict:
    """The class of one call from its sources, in the precedence order of docs/policy.md.

    1. A host registry entry (already judged on the call's arguments, see :mod:`.registry`).
    2. Else the server's declaration (:func:`declared_class`), if the host trusts the server and
       pinned its keys.
    3. Else the hints of a trusted server (R0 for a closed-world read), else R4 (``unknown``).

    A declaration that did not decide can still raise the class (a server that says a tool is
    worse than the host thought is believed), never lower it; the verdict's evidence says so.
    """
    if registered is not None:
        base = registered
        why_not = "a host registry entry outranks what the server says"
    elif declared is not None and trust.declaration_counts:
        return declared
    else:
        base = hinted_class(hints, trust.trusted) or unknown_class(hints, trust.trusted)
        why_not = trust.why_not()
    return raised(base, declared, why_not)


def raised(base: ClassVerdict, declared: ClassVerdict | None, why_not: str) -> ClassVerdict:
    """``base``, raised to what the server ``declared`` if that is worse; a lower declaration is
    kept in the evidence with ``why_not`` it did not count."""
    if declared is None:
        return base
    worse = rank(declared.rclass) > rank(base.rclass)
    if worse or (declared.rclass == base.rclass and declared.disclosure and not base.disclosure):
        said = (
            f"{declared.rationale}; the server's own word can raise the class ({base.rclass} by {base.rule})"
        )
        evidence = {**declared.evidence, "baseClass": base.rclass, "baseRule": base.rule}
        return declared.model_copy(update={"rationale": said, "evidence": evidence})
    if declared.rclass == base.rclass:
        return base
    said = f"{base.rationale}; the server declares {declared.rclass}, which does not count: {why_not}"
    evidence = {**base.evidence, "serverDeclared": declared.rclass, "serverRule": declared.rule}
    return base.model_copy(update={"rationale": said, "evidence": evidence})
