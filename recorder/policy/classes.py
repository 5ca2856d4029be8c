"""Reversibility classes R0–R4: how recoverable one call is, and the rule that says so.

R0 no effect, R1 restorable, R2 compensable at a known bounded cost, R3 hard to recover (access,
credentials, availability, physical state), R4 irreversible (a disclosure, unrecoverable
destruction). A class comes from the first source that has one, in this order: the tool's HATP
declaration, the host registry, the MCP annotations of a server the host trusts; nothing: R4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from hatp_journal.toolkit.wire import Declaration, WireModel

RClass = Literal["R0", "R1", "R2", "R3", "R4"]
CLASSES: tuple[RClass, ...] = ("R0", "R1", "R2", "R3", "R4")

Evidence = dict[str, str | int | bool | None]


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


class ClassVerdict(WireModel):
    """A call's class, the rule that produced it, a sentence why, and what it was checked against.

    ``disclosure``: the call discloses something (or the server says it cannot be taken back);
    no override lowers it.
    """

    rclass: RClass = Field(alias="class")
    rule: str
    rationale: str
    evidence: Evidence = Field(default_factory=dict)
    disclosure: bool = False


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


def classify(
    declared: ClassVerdict | None,
    registered: ClassVerdict | None,
    hints: Hints | None,
    trusted: bool,
) -> ClassVerdict:
    """The class of one call from its sources, first that has one: the declaration's class
    (:func:`declared_class`), the registry's (already judged on the call's arguments, see
    :mod:`.registry`), trusted hints, else R4."""
    return declared or registered or hinted_class(hints, trusted) or unknown_class(hints, trusted)
