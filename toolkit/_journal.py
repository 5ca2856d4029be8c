"""The Journal: runs journaled calls, stores their undo, and answers check/compensate.

Everything here is plain synchronous Python so it can be driven without MCP
(see ``hatp_journal.toolkit.testing``); ``server.py`` puts it on a FastMCP server.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from sqlalchemy import Engine
from sqlmodel import Session

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal._shared.durations import format_window
from hatp_journal.toolkit._after_commit import ActionRunner, ActionSpec
from hatp_journal.toolkit._arguments import arguments_model, validate_arguments
from hatp_journal.toolkit._effects import Effect, Tx
from hatp_journal.toolkit._spec import (
    CompensationSpec,
    OperationSpec,
    OutsideEditSpec,
    PreviewSpec,
    SampleSpec,
    spec_of,
)
from hatp_journal.toolkit._testing_surface import ShiftableClock, surface_requested
from hatp_journal.toolkit._undeclared import VersionedWrites
from hatp_journal.toolkit._undo import UndoEngine
from hatp_journal.toolkit._undo_writes import also_info, checked_also, rows_for
from hatp_journal.toolkit.errors import DeclarationError, ToolFailed
from hatp_journal.toolkit.signing import SigningKey, VerifyKey, b64url, call_payload
from hatp_journal.toolkit.store import UndoBinding, UndoRecord, create_store_engine, hash_token
from hatp_journal.toolkit.wire import (
    CallBinding,
    CompensateRequest,
    Declaration,
    EffectInfo,
    JournalObject,
    KeysAnswer,
    UndoAnswer,
    UndoDeclaration,
    UndoInfo,
)

if TYPE_CHECKING:  # FastMCP comes with the `serve` extra; the Journal runs without it (docs/install.md)
    from fastmcp import FastMCP

TOKEN_PREFIX = "ctk_"


@dataclass(frozen=True)
class Invocation:
    """The outcome of one journaled call: what the agent sees and the journal object."""

    result: Any
    journal: JournalObject


class Journal:
    """Journal support for one tool server.

    ``server`` names the server in receipts (e.g. ``"crm://acme"``); ``store`` is a
    SQLAlchemy URL, a SQLite file path, or an engine shared with the server's own
    tables, so that an effect and its undo record commit in one transaction.
    ``testing`` publishes the conformance suite's test-only surface (default: the
    ``HATP_JOURNAL_TESTING`` environment variable, see ``docs/conformance.md``).
    """

    def __init__(
        self,
        server: str,
        *,
        key: SigningKey,
        store: str | Path | Engine = "undo.db",
        clock: Callable[[], datetime] = utc_now,
        testing: bool | None = None,
    ) -> None:
        self.server = server
        self.key = key
        self.engine = store if isinstance(store, Engine) else create_store_engine(store)
        self.testing = surface_requested() if testing is None else testing
        # In testing mode the suite moves the clock forward to test expiry.
        self.clock: Callable[[], datetime] = ShiftableClock(clock) if self.testing else clock
        self.operations: dict[str, OperationSpec] = {}
        self.compensations: dict[str, CompensationSpec] = {}
        self.previews: dict[str, PreviewSpec] = {}
        self.samples: dict[str, SampleSpec] = {}
        self.outside_edits: dict[str, OutsideEditSpec] = {}
        self._argument_models: dict[str, type[BaseModel]] = {}
        self._undo = UndoEngine(self)
        self._published = False
        self._actions = ActionRunner(self.engine, server, self.now)

    # -- registration -------------------------------------------------------

    def add(self, *functions: Callable[..., Any]) -> None:
        """Take decorated tools, compensations and previews; check that they fit together."""
        operations: list[OperationSpec] = []
        for function in functions:
            spec = spec_of(function)
            if spec is None:
                raise DeclarationError(
                    f"{getattr(function, '__name__', function)!r} has no journal declaration; "
                    "decorate it with @undoable, @irreversible, @read_only, @compensates, @previews, "
                    "@sample_for, @outside_edit_for or @after_commit_action"
                )
            if isinstance(spec, OperationSpec):
                if spec.name in self.operations:
                    raise DeclarationError(f"two tools are named {spec.name!r}; pass name=... to one")
                self.operations[spec.name] = spec
                self._argument_models[spec.name] = arguments_model(spec.name, spec.function, spec.tx_param)
                operations.append(spec)
        for function in functions:
            spec = spec_of(function)
            if isinstance(spec, CompensationSpec | PreviewSpec):
                self._add_companion(spec)
            elif isinstance(spec, SampleSpec | OutsideEditSpec):
                self._add_testing_hook(spec)
            elif isinstance(spec, ActionSpec):
                if spec.name in self._actions.actions:
                    raise DeclarationError(
                        f"two after-commit actions are named {spec.name!r}; pass name=... to one"
                    )
                self._actions.actions[spec.name] = spec
        for operation in operations:
            if operation.kind == "compensate" and operation.name not in self.compensations:
                raise DeclarationError(
                    f"{operation.name} is @undoable but no compensation was registered; "
                    f"define one with @compensates({operation.function.__name__}, state=...) "
                    "and pass it to register() with the tool"
                )

    def _add_companion(self, spec: CompensationSpec | PreviewSpec) -> None:
        name = spec.operation.name
        if self.operations.get(name) is not spec.operation:
            raise DeclarationError(
                f"{spec.function.__name__} belongs to {name}, which was not registered; "
                "register the tool together with it"
            )
        table: dict[str, Any] = self.compensations if isinstance(spec, CompensationSpec) else self.previews
        if name in table:
            raise DeclarationError(f"{name} already has a {type(spec).__name__}; keep one")
        table[name] = spec

    def _add_testing_hook(self, spec: SampleSpec | OutsideEditSpec) -> None:
        decorator = "@sample_for" if isinstance(spec, SampleSpec) else "@outside_edit_for"
        operation = self.operations.get(spec.operation)
        if operation is None:
            raise DeclarationError(
                f"{decorator}({spec.operation!r}) on {spec.function.__name__}: no tool of that name was "
                "registered; register the tool together with it"
            )
        if isinstance(spec, SampleSpec) and operation.read and operation.kind is None:
            raise DeclarationError(f"{decorator}({spec.operation}): a read-only tool needs no sample")
        if isinstance(spec, OutsideEditSpec) and operation.kind != "compensate":
            raise DeclarationError(
                f"{decorator}({spec.operation}): only @undoable tools can conflict with an outside edit"
            )
        table: dict[str, Any] = self.samples if isinstance(spec, SampleSpec) else self.outside_edits
        if spec.operation in table:
            raise DeclarationError(f"{spec.operation} already has a {decorator}; keep one")
        table[spec.operation] = spec

    def declaration(self, name: str) -> Declaration:
        """The ``tools/list`` declaration of a registered tool (protocol.md §2)."""
        spec = self.operations[name]
        undo = None
        if spec.kind == "compensate" and spec.window is not None:
            undo = UndoDeclaration(
                kind="compensate",
                window=format_window(spec.window),
                window_seconds=int(spec.window.total_seconds()),
                via=spec.via,
                side_effects=list(spec.side_effects),
                cost=spec.cost,
            )
        elif spec.kind == "none":
            undo = UndoDeclaration(kind="none", via=spec.via)
        return Declaration(
            read=spec.read,
            undo=undo,
            reason=spec.reason,
            remedy=spec.remedy,
            charges=spec.charges,
            preview=name in self.previews,
        )

    def register(self, mcp: FastMCP, *functions: Callable[..., Any]) -> None:
        """Add ``functions`` and publish them, with the binding tools, on ``mcp``."""
        if self._published:
            raise DeclarationError("register() was already called; pass every function at once")
        from hatp_journal.toolkit._server import publish  # the MCP stack, only for a server that runs

        self.add(*functions)
        publish(self, mcp)
        self._published = True

    def argument_model(self, tool: str) -> type[BaseModel] | None:
        """The pydantic model that validates ``tool``'s arguments, if it is journaled."""
        return self._argument_models.get(tool)

    # -- calls ----------------------------------------------------------------

    def now(self) -> datetime:
        """The journal's clock, in UTC."""
        return self.clock().astimezone(UTC)

    def invoke(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        recorder: VerifyKey | None = None,
        call: CallBinding | None = None,
    ) -> Invocation:
        """Run a journaled tool: its effect and its undo record commit together.

        ``recorder`` is the key of the Recorder the call came through (announced in the request's
        ``_meta["hatp/recorder"]``): the token is bound to it, and only requests that Recorder
        signs may compensate it — a token copied from anywhere else is useless. ``call`` is the
        call that Recorder said this is (its run and id): echoed in the journal object, so the
        receipt signs it and can't be moved to another call.
        """
        spec = self.operations[tool]
        raw = dict(arguments or {})
        values = validate_arguments(tool, self._argument_models[tool], raw)
        now = self.now()
        with Session(self.engine) as session:
            tx = Tx(session=session, now=now, server=self.server, tool=tool)
            watched = VersionedWrites(session) if spec.kind == "compensate" else None
            try:
                returned = _call(spec.function, spec.tx_param, tx, **values)
                if watched is not None and isinstance(returned, Effect):
                    _all_named(tool, returned, watched)
                journal, record = self._journal_for(spec, returned, now)
                if call is not None:
                    journal = journal.model_copy(update={"call": call})
                if record is not None:
                    record.arguments_digest = sha256_digest(raw)
                    session.add(record)
                    assert isinstance(returned, Effect)  # a record is made only for an Effect
                    session.add_all(rows_for(record.token_hash, returned.also))
                    if recorder is not None:
                        binding = UndoBinding(
                            token_hash=record.token_hash, kid=recorder.kid, public_key=b64url(recorder.raw())
                        )
                        session.add(binding)
                session.commit()
            except BaseException:
                session.rollback()
                tx.run_after_rollback()
                raise
            finally:
                if watched is not None:
                    watched.close()
        self.after_commit(tx)
        receipt = self.key.sign(call_payload(journal.wire(), tool, raw), wire_time(now))
        result = returned.result if isinstance(returned, Effect) else returned
        return Invocation(result, journal.model_copy(update={"receipt": receipt}))

    def after_commit(self, tx: Tx) -> None:
        """``tx`` committed: run its after-commit work, then any earlier action whose retry is due."""
        tx.run_after_commit()
        self._actions.run(tx.recorded_actions)
        self._actions.retry_due()

    def retry_pending(self) -> int:
        """Try again every recorded after-commit action whose retry is due (e.g. when the server
        starts); returns how many were tried. Failures are logged and kept, never raised."""
        return self._actions.retry_due()

    def preview(self, tool: str, arguments: Mapping[str, Any] | None) -> EffectInfo:
        """Dry-run a tool through its registered preview; nothing is committed."""
        spec = self.previews.get(tool)
        if spec is None:
            raise ToolFailed(f"{tool} offers no preview", tool=tool)
        values = validate_arguments(tool, self._argument_models[tool], arguments)
        with Session(self.engine) as session:
            tx = Tx(session=session, now=self.now(), server=self.server, tool=tool)
            try:
                effect = _call(spec.function, spec.tx_param, tx, **values)
            finally:
                session.rollback()
                tx.run_after_rollback()  # a dry run: nothing it prepared may go out
        if not isinstance(effect, Effect):
            raise ToolFailed(f"preview of {tool} returned {type(effect).__name__}, not Effect")
        return _effect_info(tool, effect)

    def check(self, token: str) -> UndoAnswer:
        """Whether undo would work now; changes nothing (protocol.md §4)."""
        return self._undo.check(token)

    def compensate(self, request: CompensateRequest) -> UndoAnswer:
        """Run the stored undo if the resource is still at ``ifVersion`` (protocol.md §4)."""
        return self._undo.compensate(request)

    def keys(self) -> KeysAnswer:
        """The public keys receipts can be verified with."""
        return KeysAnswer(server=self.server, keys=[self.key.public.wire()])

    def _journal_for(
        self, spec: OperationSpec, returned: Any, now: datetime
    ) -> tuple[JournalObject, UndoRecord | None]:
        effect = returned if isinstance(returned, Effect) else None
        info = _effect_info(spec.name, effect) if effect is not None else None
        if spec.read and spec.kind is None:
            return JournalObject(server=self.server, read=True, undo=None, effect=info), None
        if spec.kind == "none":
            undo = UndoInfo(kind="none", via=spec.via)
            journal = JournalObject(
                server=self.server,
                read=spec.read,
                undo=undo,
                effect=info,
                reason=spec.reason,
                remedy=spec.remedy,
            )
            return journal, None
        if effect is None:
            raise ToolFailed(
                f"{spec.name} is @undoable but returned {type(returned).__name__}; "
                "return an Effect describing the change"
            )
        unversioned = [write.resource for write in effect.also if write.version is None]
        if effect.version is None or effect.undo is None or unversioned:
            # Without a version (or a payload) nothing can be undone safely (protocol.md §3).
            undo = UndoInfo(kind="unknown", via=spec.via)
            reason = "the server reported no version for this effect"
            if effect.version is not None and effect.undo is not None:
                reason = f"the server reported no version for {', '.join(unversioned)}"
            journal = JournalObject(server=self.server, undo=undo, effect=info, reason=reason)
            return journal, None
        assert spec.window is not None
        compensation = self.compensations[spec.name]
        payload = _payload_json(compensation, effect.undo)
        undo_by = wire_time(now + spec.window)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        record = UndoRecord(
            token_hash=hash_token(token),
            server=self.server,
            tool=spec.name,
            resource=effect.resource,
            version=effect.version,
            before=effect.before,
            etag=effect.etag,
            before_etag=effect.before_etag,
            fields_json=None
            if effect.fields is None
            else json.dumps(to_jsonable_python(dict(effect.fields))),
            payload_json=payload,
            via=spec.via,
            side_effects_json=json.dumps(list(spec.side_effects)),
            called_at=wire_time(now),
            undo_by=undo_by,
            arguments_digest="",
        )
        undo = UndoInfo(
            kind="compensate",
            undo_by=undo_by,
            via=spec.via,
            side_effects=list(spec.side_effects),
            cost=spec.cost,
        )
        journal = JournalObject(server=self.server, undo=undo, compensation_token=token, effect=info)
        return journal, record


def _call(function: Callable[..., Any], tx_param: str | None, tx: Tx, *args: Any, **kwargs: Any) -> Any:
    if tx_param is not None:
        kwargs[tx_param] = tx
    return function(*args, **kwargs)


def _all_named(tool: str, effect: Effect, watched: VersionedWrites) -> None:
    """Refuse a call that versioned a row its effect does not name: its undo could not check it.

    Only a call that will be undoable is held to it (every resource with a version, an undo payload)."""
    writes = checked_also(tool, effect)
    if effect.version is None or effect.undo is None or any(write.version is None for write in writes):
        return
    unnamed = watched.undeclared(effect)
    if unnamed:
        raise ToolFailed(
            f"{tool} changed {', '.join(unnamed)}, which its effect does not name; "
            "name every resource the call writes (Effect.resource, Effect.also) with its version",
            tool=tool,
            undeclared=unnamed,
        )


def _effect_info(tool: str, effect: Effect) -> EffectInfo:
    also = also_info(checked_also(tool, effect))
    return EffectInfo(
        summary=effect.summary,
        resource=effect.resource,
        version=effect.version,
        before=effect.before,
        uses=list(effect.uses),
        amount=effect.amount,
        fields=None if effect.fields is None else dict(effect.fields),
        changes=effect.field_changes(),
        also=also,
    )


def _payload_json(compensation: CompensationSpec, payload: BaseModel | Mapping[str, Any]) -> str:
    """Check now, not at undo time, that the compensation will accept the payload."""
    data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else dict(payload)
    if compensation.payload_type is not None:
        try:
            compensation.payload_type.model_validate(data)
        except ValueError as error:
            raise DeclarationError(
                f"{compensation.operation.name} stored an undo payload that "
                f"{compensation.function.__name__} can't take: {error}"
            ) from None
    return json.dumps(data, sort_keys=True)
