"""The test-only surface the conformance suite drives: samples, outside edits, state, clock.

Off unless the journal runs in testing mode (``Journal(testing=True)`` or the environment
variable ``HATP_JOURNAL_TESTING=1``). Never enable it where agents work: it moves the server's
clock and edits its store. The Recorder hides these tools from agents like the binding tools.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlmodel import Session

from hatp_journal._shared.clock import wire_time
from hatp_journal._shared.testing_env import TESTING_ENV as TESTING_ENV
from hatp_journal._shared.testing_env import surface_requested as surface_requested
from hatp_journal.toolkit._arguments import InvalidArguments, validate_arguments
from hatp_journal.toolkit._effects import ResourceState, Tx
from hatp_journal.toolkit.errors import ToolFailed
from hatp_journal.toolkit.wire import ClockAnswer, OperationSamples, Sample, SamplesAnswer, StateAnswer

if TYPE_CHECKING:
    from hatp_journal.toolkit._journal import Journal


class ShiftableClock:
    """A clock the suite can move forward (to test expiry); it never moves back."""

    def __init__(self, base: Callable[[], datetime]) -> None:
        self.base = base
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return self.base() + self.offset

    def advance(self, seconds: int) -> None:
        """Move forward by ``seconds`` (refuses a negative number: undo records must not un-expire)."""
        if seconds < 0:
            raise ToolFailed("the clock only moves forward", field="advanceSeconds", cause="CLOCK_BACKWARDS")
        self.offset += timedelta(seconds=seconds)


class ConformanceSurface:
    """The four testing tools as plain methods, so they are testable without MCP."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def samples(self, tool: str | None = None) -> SamplesAnswer:
        """A fresh sample for every declared, non-read operation (or only ``tool``)."""
        names = [tool] if tool is not None else list(self.journal.operations)
        offered = []
        for name in names:
            spec = self.journal.operations.get(name)
            if spec is None:
                raise ToolFailed(f"no journaled tool named {name!r}", field="tool", cause="NOT_A_TOOL")
            if spec.read and spec.kind is None:
                continue
            offered.append(
                OperationSamples(
                    tool=name, sample=self._sample(name), outside_edit=name in self.journal.outside_edits
                )
            )
        return SamplesAnswer(
            server=self.journal.server, now=wire_time(self.journal.now()), operations=offered
        )

    def touch(self, tool: str, resource: str) -> StateAnswer:
        """Change ``resource`` as someone outside the agent's run would; answer its new state."""
        edit = self.journal.outside_edits.get(tool)
        if edit is None:
            raise ToolFailed(f"{tool} offers no outside edit", field="tool", cause="NO_OUTSIDE_EDIT")
        self._in_transaction(tool, edit.function, edit.tx_param, resource)
        return self.state(tool, resource)

    def state(self, tool: str, resource: str) -> StateAnswer:
        """``resource`` as ``tool``'s compensation reads it now; changes nothing."""
        compensation = self.journal.compensations.get(tool)
        if compensation is None:
            raise ToolFailed(
                f"{tool} is not undoable; it has no state reader", field="tool", cause="NOT_UNDOABLE"
            )
        with Session(self.journal.engine) as session:
            tx = Tx(session=session, now=self.journal.now(), server=self.journal.server, tool=tool)
            found = compensation.state(resource, tx)
            if not isinstance(found, ResourceState):
                raise ToolFailed(
                    f"state reader for {tool} returned {type(found).__name__}", cause="BAD_STATE"
                )
            changed_by = found.who_changed()  # a lazy reader may need the session it read with
            session.rollback()
        return StateAnswer(
            resource=resource,
            exists=found.exists,
            version=found.version,
            etag=found.etag,
            changed_by=changed_by,
            fields=dict(found.fields),
        )

    def clock(self, advance_seconds: int = 0) -> ClockAnswer:
        """Move the server's clock forward; answer the time it shows now."""
        clock = self.journal.clock
        if not isinstance(clock, ShiftableClock):
            raise ToolFailed("this journal's clock cannot be moved", cause="CLOCK_FIXED")
        clock.advance(advance_seconds)
        return ClockAnswer(now=wire_time(self.journal.now()))

    def _sample(self, tool: str) -> Sample | None:
        maker = self.journal.samples.get(tool)
        if maker is None:
            return None
        sample = self._in_transaction(tool, maker.function, maker.tx_param)
        if not isinstance(sample, Sample):
            raise ToolFailed(
                f"the sample maker of {tool} returned {type(sample).__name__}", cause="BAD_SAMPLE"
            )
        model = self.journal.argument_model(tool)
        try:
            if model is not None:
                validate_arguments(tool, model, sample.arguments)
        except InvalidArguments as error:
            raise ToolFailed(
                f"the sample of {tool} has invalid arguments", cause="BAD_SAMPLE", **error.data
            ) from None
        return sample

    def _in_transaction(
        self, tool: str, function: Callable[..., Any], tx_param: str | None, *args: Any
    ) -> Any:
        with Session(self.journal.engine) as session:
            tx = Tx(session=session, now=self.journal.now(), server=self.journal.server, tool=tool)
            kwargs = {tx_param: tx} if tx_param else {}
            try:
                returned = function(*args, **kwargs)
                session.commit()
            except BaseException:
                session.rollback()
                tx.run_after_rollback()
                raise
        tx.run_after_commit()
        return returned
