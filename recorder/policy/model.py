"""The autonomy policy file (protocol.md §7) as pydantic models.

Every field that grants autonomy defaults to ``"ask"``: a policy that says nothing allows nothing.
Restrictions (``via.ui``, ``minWindowSeconds``, money caps, ``requireVerified``) can only add asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AwareDatetime,
    Field,
    PrivateAttr,
    StrictBool,
    field_validator,
    model_validator,
)

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.durations import MAX_WINDOW_SECONDS, parse_window
from hatp_journal.recorder.policy.attestations import Attestations, AttestationTrust
from hatp_journal.recorder.policy.classes import RClass
from hatp_journal.recorder.policy.registry import Registry
from hatp_journal.toolkit.wire import Money, WireModel

Seconds = Annotated[int, Field(ge=0, le=MAX_WINDOW_SECONDS)]
"""A policy's ``…Seconds``: at most :data:`~hatp_journal._shared.durations.MAX_WINDOW_SECONDS` (100
years), so that every time it is added to or taken from stays a date (docs/policy.md)."""

PositiveSeconds = Annotated[int, Field(gt=0, le=MAX_WINDOW_SECONDS)]

Action = Literal["allow", "ask"]
"""What the Recorder does with a call: forward it (``allow``) or hold it for an approver (``ask``)."""


ClassAction = Literal["allow", "allow-notify", "ask-or-budget", "ask", "never-autonomous"]
"""What a class policy does with a call of one class (docs/policy.md, "Reversibility classes")."""


class ClassActions(WireModel):
    """``autonomy.classes``: the action for each class. A class not named asks.

    R4 is never autonomous: a policy that says anything else for R4 is refused when loaded.
    """

    r0: ClassAction = Field(default="ask", alias="R0")
    r1: ClassAction = Field(default="ask", alias="R1")
    r2: ClassAction = Field(default="ask", alias="R2")
    r3: ClassAction = Field(default="ask", alias="R3")
    # Only never-autonomous: with "ask", an action override could let a disclosure act alone.
    r4: Literal["never-autonomous"] = Field(default="never-autonomous", alias="R4")

    def of(self, cls: RClass) -> ClassAction:
        """The action for ``cls``."""
        action: ClassAction = getattr(self, cls.lower())
        return action


class RegistryUse(WireModel):
    """``registry``: the host registry files the policy adds to the shipped ones (relative to the
    policy file; one with a shipped file's server id replaces it), and which registry record
    classifies each server of recorder.toml."""

    files: tuple[str, ...] = ()
    servers: dict[str, str] = Field(default_factory=dict, description="server name -> registry server id")


class ClassOverride(WireModel):
    """Moves one tool's class up or down for this deployment, with the reason logged on every
    decision. It never lowers a disclosure; one that lowers names (``by``) a person in the
    directory holding the policy's ``classAuthority`` (override_people.py)."""

    server: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    rclass: RClass = Field(alias="class")
    by: str = Field(min_length=1, description="Who decided the override")
    reason: str = Field(min_length=1)


class ViaRules(WireModel):
    """Extra asks by undo route. Only ``ui`` is a route worth gating (protocol.md §6); it asks by default."""

    ui: Action = "ask"


class PeriodCap(Money):
    """A cap on money moved within a rolling period, e.g. 5000 USD per ``P7D``."""

    period: str = Field(description="ISO-8601 duration of the rolling window, e.g. P7D")

    @field_validator("period")
    @classmethod
    def _period_is_a_duration(cls, value: str) -> str:
        parse_window(value)  # raises ValueError, which pydantic reports at this key
        return value

    @property
    def window(self) -> timedelta:
        """The rolling window as a ``timedelta``."""
        return parse_window(self.period)


class MoneyCaps(WireModel):
    """Caps on money moved by calls that charge (``charges: true``). An absent cap is no cap."""

    per_run: Money | None = None
    per_period: PeriodCap | None = None


class Autonomy(WireModel):
    """The ``autonomy`` object: what each kind of operation may do without a human."""

    compensate: Action = "ask"
    unknown: Action = "ask"
    none: Action = "ask"
    read: Action = "ask"
    via: ViaRules = Field(default_factory=ViaRules)
    classes: ClassActions | None = None
    min_window_seconds: Seconds = 0
    money: MoneyCaps = Field(default_factory=MoneyCaps)
    require_verified: StrictBool = False
    attestations: AttestationTrust | None = None
    approver: str | None = Field(default=None, min_length=1)
    decide_within_seconds: PositiveSeconds | None = None

    @model_validator(mode="after")
    def _kinds_or_classes(self) -> Self:
        # Both could disagree about the same call; a policy speaks one or the other.
        kinds = self.model_fields_set & {"compensate", "unknown", "none", "read"}
        if self.classes is not None and kinds:
            named = ", ".join(sorted(kinds))
            raise ValueError(f"give classes or kinds ({named}), not both")
        return self


class ReviewRules(WireModel):
    """When people hear about open undo windows (protocol.md §12).

    A reminder goes to the run's principal ``remindBeforeSeconds`` before each open window closes;
    if nobody has looked by ``escalateBeforeSeconds`` before it closes, the holders of ``escalateTo``
    (default: the ``undoAuthority``) are told too.
    """

    remind_before_seconds: PositiveSeconds = 86_400
    escalate_before_seconds: Seconds = 14_400
    escalate_to: str | None = Field(default=None, min_length=1)


class PolicyOverride(WireModel):
    """Lifts (or holds back) one operation for calls made at or after ``from``; never retroactive."""

    server: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    action: Action
    from_: AwareDatetime = Field(alias="from")
    by: str = Field(min_length=1, description="Who decided the override")
    reason: str = Field(min_length=1)


class Policy(WireModel):
    """The organisation's autonomy policy. Never shown to, or changeable by, the agent."""

    autonomy: Autonomy = Field(default_factory=Autonomy)
    undo_authority: str | None = Field(default=None, min_length=1)
    class_authority: str | None = Field(
        default=None, min_length=1, description="Role whose holders may lower a class (else undoAuthority)"
    )
    overrides: tuple[PolicyOverride, ...] = ()
    review: ReviewRules = Field(default_factory=ReviewRules)
    registry: RegistryUse = Field(default_factory=RegistryUse)
    class_overrides: tuple[ClassOverride, ...] = ()
    agent_tools: bool = Field(default=True, description="Publish the Recorder's own tools to the agent")

    _digest: str | None = PrivateAttr(default=None)
    _attested: Attestations | None = PrivateAttr(default=None)
    _registry: Registry | None = PrivateAttr(default=None)

    def canonical(self) -> dict[str, Any]:
        """The effective policy as JSON, defaults filled in: what the digest covers."""
        return self.model_dump(mode="json", by_alias=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with the digest cache dropped: ``update`` may have changed what the digest covers."""
        copy = super().model_copy(update=update, deep=deep)
        copy._digest = None
        copy._attested = None
        copy._registry = None
        return copy

    def digest(self) -> str:
        """``sha256:<hex>`` of the RFC 8785 form of :meth:`canonical`; every journal entry records it."""
        # Cached (about 150 µs to compute; the Recorder needs it on every call). Safe because every
        # model in the policy is frozen and model_copy drops the cache.
        if self._digest is None:
            self._digest = sha256_digest(self.canonical())
        return self._digest

    def attested(self, base: Path | None = None) -> Attestations | None:
        """The attestations ``autonomy.attestations`` names, read once (relative to ``base``, default
        the working directory); None when it names none. ``load_policy`` reads them at load time."""
        trust = self.autonomy.attestations
        if trust is None:
            return None
        if self._attested is None:
            self._attested = Attestations.load(trust, base or Path.cwd())
        return self._attested

    def host_registry(self, base: Path | None = None) -> Registry:
        """The shipped registry files plus those ``registry.files`` names, read once (relative to
        ``base``, default the working directory); ``load_policy`` reads them at load time."""
        if self._registry is None:
            self._registry = Registry.load(self.registry.files, self.registry.servers, base or Path.cwd())
        return self._registry
