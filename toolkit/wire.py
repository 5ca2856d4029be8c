"""The wire format (protocol.md §2–§4) as pydantic models with camelCase aliases.

The JSON Schema of each top-level model is published under ``docs/schema/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

# Canonical JSON, wire times and windows: what a server writes into the wire's fields.
from hatp_journal._shared.canonical import canonical_bytes as canonical_bytes
from hatp_journal._shared.canonical import content_etag as content_etag
from hatp_journal._shared.canonical import sha256_digest as sha256_digest
from hatp_journal._shared.clock import parse_wire_time as parse_wire_time
from hatp_journal._shared.clock import utc_now as utc_now
from hatp_journal._shared.clock import wire_time as wire_time
from hatp_journal._shared.durations import format_window as format_window
from hatp_journal._shared.durations import parse_window as parse_window
from hatp_journal.toolkit.errors import ErrorCode

META_KEY = "hatp/journal"
"""The ``_meta`` key under which declarations and journal objects travel."""

PROTOCOL = "hatp-journal/0.3"

CHECK_TOOL = "hatp_journal_check"
COMPENSATE_TOOL = "hatp_journal_compensate"
KEYS_TOOL = "hatp_journal_keys"
PREVIEW_TOOL = "hatp_journal_preview"

SAMPLES_TOOL = "hatp_testing_samples"
TOUCH_TOOL = "hatp_testing_touch"
CLOCK_TOOL = "hatp_testing_clock"
STATE_TOOL = "hatp_testing_state"
TESTING_TOOLS = (SAMPLES_TOOL, TOUCH_TOOL, CLOCK_TOOL, STATE_TOOL)
"""The test-only surface the conformance suite drives (``docs/conformance.md``); off unless enabled."""

BINDING_TOOLS = (CHECK_TOOL, COMPENSATE_TOOL, KEYS_TOOL, PREVIEW_TOOL, *TESTING_TOOLS)
"""Tools only the Recorder (or, for the testing ones, the conformance suite) calls, never an agent;
their names are part of the protocol."""

UndoKind = Literal["compensate", "none", "unknown"]
Via = Literal["api", "ui"]


class WireModel(BaseModel):
    """Base: camelCase on the wire, snake_case in Python; unknown fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    def wire(self) -> dict[str, Any]:
        """The JSON object as sent: camelCase keys, no ``None`` fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Money(WireModel):
    """An amount of money as a decimal string, e.g. ``{"amount": "2.50", "currency": "USD"}``."""

    amount: str = Field(pattern=r"^\d+(\.\d+)?$")
    currency: str = Field(pattern=r"^[A-Z]{3}$")


class UndoDeclaration(WireModel):
    """How an operation can be undone, declared before any call."""

    kind: Literal["compensate", "none"]
    window: str | None = Field(default=None, description="ISO-8601 duration, e.g. P7D")
    window_seconds: int | None = None
    via: Via = "api"
    side_effects: list[str] = Field(default_factory=list)
    cost: Money | None = None


class Declaration(WireModel):
    """``tools/list`` entry ``_meta["hatp/journal"]`` of a journal-aware tool (protocol.md §2)."""

    protocol: str = PROTOCOL
    read: bool = False
    undo: UndoDeclaration | None = None
    reason: str | None = None
    remedy: str | None = None
    charges: bool = False
    preview: bool = False

    def digest(self) -> str:
        """``sha256:`` of the RFC 8785 form of :meth:`wire`: what a conformance attestation binds,
        so that a declaration changed after the suite ran (a shorter window, new side effects)
        is no longer the one attested."""
        return sha256_digest(self.wire())


class Use(WireModel):
    """A resource (at a version) that a call read or relied on."""

    resource: str
    version: str | None = None


class EffectChange(WireModel):
    """One field a call changed: its stored value before and after (``effect.changes``)."""

    field: str
    before: Any = None
    after: Any = None


class AlsoWrite(WireModel):
    """Another resource a call wrote besides ``effect.resource`` (``effect.also``), with its version
    before and after the call: the undo checks it and puts it back too."""

    resource: str = Field(min_length=1)
    version: str | None = Field(default=None, min_length=1, description="The version the call left")
    before: str | None = Field(
        default=None, min_length=1, description="The version before the call (absent: the call created it)"
    )
    fields: dict[str, Any] | None = Field(default=None, description="Field values the call left")


class EffectInfo(WireModel):
    """What a call changed, written by the server from its store (protocol.md §3)."""

    summary: str
    resource: str
    version: str | None = None
    before: str | None = None
    uses: list[Use] = Field(default_factory=list)
    amount: Money | None = None
    fields: dict[str, Any] | None = Field(
        default=None, description="Field values the call left (for previews and comparisons)"
    )
    changes: list[EffectChange] | None = Field(
        default=None,
        description="The fields the call changed, each with its stored value before and after, in the "
        "order the summary shows them; the Recorder shows the undo as these changes reversed",
    )
    also: list[AlsoWrite] | None = Field(
        default=None,
        min_length=1,
        description="Every other resource the call wrote, each with its own version; absent when the "
        "call wrote only effect.resource. No resource may be named twice.",
    )

    @model_validator(mode="after")
    def _each_resource_once(self) -> EffectInfo:
        named = [self.resource, *(write.resource for write in self.also or ())]
        twice = sorted({resource for resource in named if named.count(resource) > 1})
        if twice:
            raise ValueError(f"effect names {', '.join(twice)} more than once; list each resource once")
        return self


class UndoInfo(WireModel):
    """The undo terms of one call."""

    kind: UndoKind
    undo_by: str | None = None
    via: Via = "api"
    side_effects: list[str] = Field(default_factory=list)
    cost: Money | None = None


class Receipt(WireModel):
    """An Ed25519 signature over RFC 8785 canonical JSON (see ``signing``)."""

    # On the wire every member is written, alg included: a receipt has exactly these four.
    model_config = ConfigDict(**WireModel.model_config, json_schema_serialization_defaults_required=True)

    alg: Literal["Ed25519"] = "Ed25519"
    kid: str
    sig: str
    issued_at: str


class CallBinding(WireModel):
    """The call a Recorder says a request is: its run and an id the Recorder never uses twice.

    Sent in the request's ``_meta["hatp/recorder"]["call"]`` and echoed, unchanged, in the journal
    object the server signs, so the call receipt can't be moved to another call or another run's
    record (``docs/binding.md``)."""

    run: str = Field(min_length=1, max_length=200)
    id: str = Field(min_length=1, max_length=200)


class JournalObject(WireModel):
    """``_meta["hatp/journal"]`` of a journal-aware tool result (protocol.md §3)."""

    protocol: str = PROTOCOL
    server: str
    read: bool = False
    undo: UndoInfo | None = None
    compensation_token: str | None = None
    effect: EffectInfo | None = None
    reason: str | None = None
    remedy: str | None = None
    call: CallBinding | None = None
    receipt: Receipt | None = None


RECORDER_META_KEY = "hatp/recorder"
"""The request ``_meta`` key under which a Recorder announces its key to a tool server, so that the
tokens minted for that call are bound to it (``docs/binding.md``)."""


class Override(WireModel):
    """A human's explicit choice to undo over a conflict, carrying the approval that chose it.

    A server honours an override only inside a request proven by the Recorder the token was
    issued through (``CompensateRequest.proof``); ``versionFound`` is the conflict the person saw,
    so a resource that changed again since is a new conflict, not overwritten.
    """

    approval: str = Field(min_length=1, description="Reference to the signed approval")
    by: str = Field(min_length=1, description="Who chose to override")
    version_found: str | None = Field(
        default=None, description="The version the person chose to overwrite (the conflict shown)"
    )
    decision: dict[str, Any] | None = Field(
        default=None, description="The person's own signed override, as the Recorder recorded it"
    )


class CheckRequest(WireModel):
    """Arguments of ``hatp_journal_check``: a dry run that changes nothing."""

    token: str = Field(min_length=1)


class CompensateRequest(WireModel):
    """Arguments of ``hatp_journal_compensate``."""

    token: str = Field(min_length=1)
    if_version: str = Field(min_length=1)
    override: Override | None = None
    request_id: str | None = Field(
        default=None, description="Distinguishes a new attempt from a retry of an earlier one"
    )
    if_versions: dict[str, str] | None = Field(
        default=None,
        description="For a call that wrote several resources: the version expected of each resource in "
        "effect.also, by resource; one not named is expected at the version the call left it",
    )
    proof: Receipt | None = Field(
        default=None,
        description="The Recorder's signature over the request (see signing.compensate_payload); "
        "required when the token was issued through a Recorder",
    )


class FieldChange(WireModel):
    """One field that differs from what the call left behind."""

    field: str
    expected: Any = None
    now: Any = None


class ResourceFound(WireModel):
    """What ``check`` or ``compensate`` found of one resource of a call that wrote several."""

    resource: str
    status: Literal["ok", "conflict"]
    version_expected: str | None = None
    version_found: str | None = None
    version_left: str | None = Field(default=None, description="After a compensate that was done")
    changed_by: str | None = None
    changes: list[FieldChange] = Field(default_factory=list)


CheckStatus = Literal["ok", "conflict", "expired", "done", "unknown_token"]
UndoStatus = Literal["ok", "conflict", "expired", "done", "unknown_token", "failed", "unverified", "refused"]


class UndoAnswer(WireModel):
    """The signed answer of ``check`` and ``compensate``: an undo receipt (protocol.md §4)."""

    protocol: str = PROTOCOL
    server: str
    operation: Literal["check", "compensate"]
    status: UndoStatus
    code: ErrorCode | None = None
    message: str = ""
    token_digest: str
    tool: str | None = None
    resource: str | None = None
    undo_by: str | None = None
    version_expected: str | None = None
    version_found: str | None = None
    version_left: str | None = None
    changed_by: str | None = None
    changes: list[FieldChange] = Field(default_factory=list)
    side_effects: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    override: Override | None = None
    resources: list[ResourceFound] | None = Field(
        default=None,
        description="For a call that wrote several resources (effect.also): each of them as found, "
        "effect.resource first; absent for a call that wrote one",
    )
    at: str
    receipt: Receipt | None = None


class PublicKey(WireModel):
    """One of a server's receipt-signing keys."""

    kid: str
    alg: Literal["Ed25519"] = "Ed25519"
    public_key: str = Field(description="Raw 32-byte Ed25519 public key, base64url, no padding")


class KeysAnswer(WireModel):
    """Answer of ``hatp_journal_keys``."""

    server: str
    keys: list[PublicKey]


class ErrorBody(WireModel):
    """Structured content of an error result: a stable code and the data behind it."""

    code: ErrorCode
    message: str
    data: dict[str, Any] = Field(default_factory=dict)


class Sample(WireModel):
    """Arguments for one real call of an operation, for the conformance suite (test-only surface).

    ``arguments`` should be spelled differently from how the store keeps them where the tool
    allows it (case, spaces, duplicates, another timezone), so that a summary written from the
    arguments shows. ``shows``: text a summary written from the stored change contains;
    ``hides``: text only a summary written from the arguments would contain. ``resource``: what
    the call will change when it exists already, so its state before the call can be read.
    ``undoMayDiffer``: fields an undo may leave different from before the call because the app
    records that it was undone (a refunded order's status).
    """

    arguments: dict[str, Any]
    resource: str | None = None
    shows: list[str] = Field(default_factory=list)
    hides: list[str] = Field(default_factory=list)
    undo_may_differ: list[str] = Field(default_factory=list)
    also: list[str] | None = Field(
        default=None, description="The other existing resources the call will change (effect.also)"
    )


class OperationSamples(WireModel):
    """What the test-only surface offers for one operation."""

    tool: str
    sample: Sample | None = None
    outside_edit: bool = Field(
        default=False, description="Whether hatp_testing_touch can change its resource"
    )


class SamplesAnswer(WireModel):
    """Answer of ``hatp_testing_samples``: a fresh sample per declared operation."""

    server: str
    now: str
    operations: list[OperationSamples]


class StateAnswer(WireModel):
    """Answer of ``hatp_testing_state`` and ``hatp_testing_touch``: a resource as stored now."""

    resource: str
    exists: bool
    version: str | None = None
    etag: str | None = None
    changed_by: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)


class ClockAnswer(WireModel):
    """Answer of ``hatp_testing_clock``: the server's time after moving it."""

    now: str


SCHEMA_MODELS: dict[str, type[WireModel]] = {
    "declaration": Declaration,
    "journal-object": JournalObject,
    "check-request": CheckRequest,
    "compensate-request": CompensateRequest,
    "undo-answer": UndoAnswer,
    "keys-answer": KeysAnswer,
    "error": ErrorBody,
    "testing-samples-answer": SamplesAnswer,
    "testing-state-answer": StateAnswer,
}


def conflict_words(conflicts: Sequence[ResourceFound]) -> str:
    """``crm://…/D-2: amount is now 9.00 (v4), changed by eve@acme.com; …``: each conflict named."""
    said = []
    for one in conflicts:
        if one.version_found is None:
            said.append(f"{one.resource}: it no longer exists")
            continue
        what = ", ".join(f"{c.field} is now {c.now}" for c in one.changes) or "it changed"
        by = f", changed by {one.changed_by}" if one.changed_by else ""
        said.append(f"{one.resource}: {what} ({one.version_found}){by}")
    return "; ".join(said)
