"""What the gateway knows about a call before forwarding it: the input to every policy decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from hatp_journal._shared.durations import parse_window
from hatp_journal.recorder.policy.classes import ClassVerdict, Hints, declared_class
from hatp_journal.toolkit.wire import Declaration, Money, Via

Kind = Literal["compensate", "none", "unknown", "read"]
"""How a call can be undone, as the policy sees it; ``read``: read-only and not declared ``none``."""

KINDS: frozenset[str] = frozenset({"compensate", "none", "unknown", "read"})
VIAS: frozenset[str] = frozenset({"api", "ui"})


@dataclass(frozen=True, kw_only=True)
class CallFacts:
    """One call, as classified by the gateway from the tool's declaration (protocol.md §2).

    ``amount`` is what this call would move, required when ``charges`` is true and a money cap
    applies; ``verified`` says the operation's undo passed the conformance suite (protocol.md §13), which
    the policy can also learn from attestations naming one of ``server_keys`` (the kids of the
    server's receipt keys the Recorder pinned); ``run`` is required when a per-run money cap
    applies (without it that cap asks); ``declaration_digest`` is
    :meth:`~hatp_journal.toolkit.wire.Declaration.digest` of the declaration the gateway read for
    the tool, which an attestation must name (none: no attestation counts).

    For the reversibility class (:mod:`.classes`): ``declared_class`` is what the declaration says,
    ``hints`` the tool's MCP annotations, ``trusted`` whether the host trusts the server's hints
    (``trusted`` in recorder.toml), ``arguments`` the call's, for the registry's argument rules.
    ``reversibility`` is the class the policy gave the call (``decide`` fills it in).
    """

    server: str
    tool: str
    kind: Kind
    at: datetime
    via: Via | None = None
    window_seconds: int | None = None
    charges: bool = False
    amount: Money | None = None
    verified: bool = False
    run: str | None = None
    server_keys: frozenset[str] = frozenset()
    declaration_digest: str | None = None
    declared_class: ClassVerdict | None = None
    hints: Hints | None = None
    trusted: bool = False
    arguments: Mapping[str, Any] = field(default_factory=dict)
    reversibility: ClassVerdict | None = None

    @classmethod
    def from_declaration(
        cls,
        declaration: Declaration | None,
        *,
        server: str,
        tool: str,
        at: datetime,
        amount: Money | None = None,
        verified: bool = False,
        run: str | None = None,
        server_keys: frozenset[str] = frozenset(),
        annotations: Any = None,
        arguments: Mapping[str, Any] | None = None,
        trusted: bool = False,
        journal_aware: bool = True,
    ) -> CallFacts:
        """Classify a call from its tool's declaration; no declaration (an unaware server) is ``unknown``.

        ``annotations`` are the tool's MCP annotations as listed (``ToolAnnotations`` or None).
        ``journal_aware``: the server offers the journal binding (its keys are pinned); a
        declaration from one that does not is only believed where it makes the call worse: its
        kind is ``unknown`` unless it declares ``none``.
        """
        hints = Hints.of(annotations)
        given = dict(arguments) if isinstance(arguments, Mapping) else {}
        if declaration is None:
            return cls(
                run=run,
                server=server,
                tool=tool,
                kind="unknown",
                at=at,
                amount=amount,
                server_keys=server_keys,
                hints=hints,
                trusted=trusted,
                arguments=given,
            )
        undo = declaration.undo
        # A read declared "none" (export_report) stays "none": a disclosure cannot be taken back.
        kind: Kind = undo.kind if undo is not None else "read" if declaration.read else "unknown"
        if not journal_aware and kind != "none":
            # A server without pinned keys can't be held to what it declares (no signed receipt,
            # no binding to undo through): its word makes a call worse, never better.
            return cls(
                run=run,
                server=server,
                tool=tool,
                kind="unknown",
                at=at,
                charges=declaration.charges,
                amount=amount,
                declaration_digest=declaration.digest(),
                declared_class=declared_class(declaration),
                hints=hints,
                trusted=trusted,
                arguments=given,
            )
        return cls(
            run=run,
            server=server,
            tool=tool,
            kind=kind,
            at=at,
            via=undo.via if undo is not None else None,
            window_seconds=_window_seconds(declaration),
            charges=declaration.charges,
            amount=amount,
            verified=verified,
            server_keys=server_keys,
            declaration_digest=declaration.digest(),
            declared_class=declared_class(declaration),
            hints=hints,
            trusted=trusted,
            arguments=given,
        )


def _window_seconds(declaration: Declaration) -> int | None:
    undo = declaration.undo
    if undo is None or undo.kind != "compensate":
        return None
    windows = [] if undo.window_seconds is None else [undo.window_seconds]
    if undo.window is not None:
        try:
            windows.append(int(parse_window(undo.window).total_seconds()))
        except ValueError:
            windows.append(0)  # an unreadable window is no window: the minimum check then asks
    # Two windows that disagree: trust the shorter one.
    return min(windows) if windows else None
