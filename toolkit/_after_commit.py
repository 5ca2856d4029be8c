"""Work after the commit that must not be lost: recorded with the change, run after it, retried.

``tx.after_commit(action, data)`` with an action decorated :func:`after_commit_action` writes a row
to ``hatp_after_commit`` in the call's own transaction, so the work exists exactly when the change
does. After the commit the toolkit runs it with the stored plain data (never the session's rows,
which are detached by then). An action that raises is logged (server, tool, action, error), kept
with its error, and tried again with backoff: after a later call of the same server, or when the
server calls :meth:`~hatp_journal.toolkit.Journal.retry_pending`. ``hatp-journal pending --db``
lists what waits; a person may drop an action (``--drop ID --by WHO``), which is then kept as
dropped, never deleted.

Actions run at least once: one that succeeded in a process killed before it could mark the row
done runs again. Make them idempotent (the demo servers' mail goes through an outbox for that).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Engine, update
from sqlmodel import Field, Session, SQLModel, col, select

from hatp_journal._shared.clock import wire_time

LOG = logging.getLogger("hatp_journal.toolkit._after_commit")

FIRST_RETRY = timedelta(seconds=30)
"""The wait before the first retry of a failed action; it doubles with each failure, up to LAST_RETRY."""
LAST_RETRY = timedelta(hours=1)
CLAIM = timedelta(minutes=5)
"""How long a running action is held by the process that claimed it before another may try it."""


class PendingAction(SQLModel, table=True):
    """One after-commit action, from the call that registered it until it ran or a person dropped it."""

    __tablename__ = "hatp_after_commit"

    id: str = Field(primary_key=True)
    server: str = Field(index=True)
    tool: str
    action: str
    data_json: str
    created_at: str
    state: str = "pending"  # pending | done | dropped
    attempts: int = 0
    next_try_at: str
    last_error: str | None = None
    finished_at: str | None = None
    dropped_by: str | None = None


@dataclass(frozen=True)
class ActionSpec:
    """An action that may run after a commit, by its stable name (what the store keeps)."""

    name: str
    function: Callable[[Any], None]
    data_type: type[BaseModel] | None


def new_row(
    spec: ActionSpec, data: BaseModel | Mapping[str, Any], *, server: str, tool: str, now: str
) -> PendingAction:
    """The row that records ``spec`` to run with ``data`` (a pydantic model or JSON mapping)."""
    plain = data.model_dump(mode="json") if isinstance(data, BaseModel) else dict(data)
    return PendingAction(
        id=secrets.token_hex(16),
        server=server,
        tool=tool,
        action=spec.name,
        data_json=json.dumps(plain, ensure_ascii=False, sort_keys=True),
        created_at=now,
        next_try_at=now,
    )


def log_failed_closure(server: str, tool: str, action: Callable[[], None], error: str) -> None:
    """A plain ``after_commit`` callable raised: say so (it is not kept; use a registered action)."""
    name = getattr(action, "__qualname__", repr(action))
    LOG.error("after-commit action %s of %s %s failed (not kept, not retried): %s", name, server, tool, error)


class ActionRunner:
    """Runs a server's recorded actions: right after their commit, and again when due."""

    def __init__(self, engine: Engine, server: str, clock: Callable[[], datetime]) -> None:
        self.engine = engine
        self.server = server
        self.clock = clock
        self.actions: dict[str, ActionSpec] = {}

    def run(self, ids: list[str]) -> None:
        """Try each of these actions once now (they were just committed)."""
        for row_id in ids:
            self._try(row_id)

    def retry_due(self) -> int:
        """Try every action of this server whose retry is due; returns how many were tried."""
        if not self.actions:
            return 0
        now = _wire(self.clock())
        with Session(self.engine) as session:
            due = session.exec(
                select(PendingAction.id)
                .where(PendingAction.server == self.server)
                .where(PendingAction.state == "pending")
                .where(col(PendingAction.next_try_at) <= now)
                .order_by(col(PendingAction.created_at))
            ).all()
        for row_id in due:
            self._try(row_id)
        return len(due)

    def _try(self, row_id: str) -> None:
        now = self.clock()
        with Session(self.engine) as session:
            row = session.get(PendingAction, row_id)
            if row is None or row.state != "pending" or row.action not in self.actions:
                return  # done, dropped, or another program's action: not this process's to run
            # Read before the claim commits (which expires the row).
            spec, attempt, data, tool = self.actions[row.action], row.attempts + 1, row.data_json, row.tool
            # Claimed by moving its next try past the claim: a replica that read the same row loses.
            claimed = session.execute(
                update(PendingAction)
                .where(col(PendingAction.id) == row_id)
                .where(col(PendingAction.state) == "pending")
                .where(col(PendingAction.attempts) == attempt - 1)
                .values(attempts=attempt, next_try_at=_wire(now + CLAIM))
            )
            session.commit()
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                return
        try:
            spec.function(_data_for(spec, data))
        except Exception as error:  # noqa: BLE001 -- the author's code: its failure is kept, not raised
            said = f"{type(error).__name__}: {error}"
            retry = now + min(FIRST_RETRY * 2 ** (attempt - 1), LAST_RETRY)
            LOG.error(
                "after-commit action %s (%s) of %s %s failed, attempt %d, next try at %s: %s",
                spec.name,
                row_id,
                self.server,
                tool,
                attempt,
                _wire(retry),
                said,
            )
            self._finish(row_id, last_error=said[:2000], next_try_at=_wire(retry))
        else:
            self._finish(row_id, state="done", finished_at=_wire(self.clock()))

    def _finish(self, row_id: str, **values: Any) -> None:
        with Session(self.engine) as session:
            session.execute(
                update(PendingAction)
                .where(col(PendingAction.id) == row_id)
                .where(col(PendingAction.state) == "pending")
                .values(**values)
            )
            session.commit()


def _data_for(spec: ActionSpec, data_json: str) -> Any:
    plain = json.loads(data_json)
    return plain if spec.data_type is None else spec.data_type.model_validate(plain)


def _wire(moment: datetime) -> str:
    return wire_time(moment)


def pending(engine: Engine, *, every: bool = False) -> list[PendingAction]:
    """The actions still waiting (``every``: done and dropped ones too), oldest first."""
    with Session(engine) as session:
        query = select(PendingAction).order_by(col(PendingAction.created_at))
        if not every:
            query = query.where(PendingAction.state == "pending")
        return list(session.exec(query).all())


def drop(engine: Engine, row_id: str, *, by: str, now: str) -> bool:
    """A person gives up on a waiting action: kept as dropped, with who; False if none waits by that id."""
    with Session(engine) as session:
        dropped = session.execute(
            update(PendingAction)
            .where(col(PendingAction.id) == row_id)
            .where(col(PendingAction.state) == "pending")
            .values(state="dropped", dropped_by=by, finished_at=now)
        )
        session.commit()
        return bool(dropped.rowcount == 1)  # type: ignore[attr-defined]
