"""Hooks for the conformance suite's test-only surface (see ``docs/conformance.md``).

A server author gives the suite, per declared operation, fresh sample arguments and, for an
undoable one, a way to change its resource as someone outside the agent's run would. Pass them
to :meth:`Journal.register` with the tools; they are published only in testing mode
(``HATP_JOURNAL_TESTING=1``)::

    @sample_for(update_deal)
    def stage_change(tx: Tx) -> Sample:
        return Sample(
            arguments={"deal_id": "D-883", "stage": "  negotiation "},
            resource="crm://acme/deal/D-883",
            shows=["→ Negotiation"],  # the stored spelling
            hides=["negotiation"],  # the agent's spelling
        )

    @outside_edit_for(update_deal)
    def eve_moves_the_deal(resource: str, tx: Tx) -> None: ...

A sample maker runs in its own committed transaction each time the suite asks, so it can read
the store (pick a value that really changes something) or create what the call needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hatp_journal.toolkit._spec import (
    OperationSpec,
    OutsideEditSpec,
    SampleSpec,
    _attach,
    _check_arity,
    _name,
    _tx_param,
    spec_of,
)
from hatp_journal.toolkit.errors import DeclarationError

F = TypeVar("F", bound=Callable[..., Any])

_CALLED = "can't be called as the surface calls it"


def sample_for(operation: Callable[..., Any] | str) -> Callable[[F], F]:
    """Register the decorated ``sample(tx) -> Sample`` as the maker of ``operation``'s samples.

    ``operation`` is the decorated tool or its name (for tools built in a closure).
    """
    name = _operation_name(operation, "@sample_for")

    def attach(function: F) -> F:
        _check_arity(function, 0, f"sample maker {_name(function)}", "def sample(tx: Tx) -> Sample", _CALLED)
        spec = SampleSpec(name, function, _tx_param(function, "@sample_for"))
        return _attach(function, spec, "@sample_for")

    return attach


def outside_edit_for(operation: Callable[..., Any] | str) -> Callable[[F], F]:
    """Register the decorated ``edit(resource, tx)`` as a change made outside the agent's run.

    The suite calls it on a resource the agent changed, to provoke ``UNDO_CONFLICT``. It must
    change the resource through the server's own store and versioning, and say who made it.
    """
    name = _operation_name(operation, "@outside_edit_for")

    def attach(function: F) -> F:
        _check_arity(
            function, 1, f"outside edit {_name(function)}", "def edit(resource: str, tx: Tx)", _CALLED
        )
        spec = OutsideEditSpec(name, function, _tx_param(function, "@outside_edit_for"))
        return _attach(function, spec, "@outside_edit_for")

    return attach


def _operation_name(operation: Callable[..., Any] | str, decorator: str) -> str:
    if isinstance(operation, str):
        if not operation.isidentifier():
            raise DeclarationError(f"{decorator}({operation!r}): name a tool, e.g. {decorator}(update_deal)")
        return operation
    spec = spec_of(operation)
    if not isinstance(spec, OperationSpec):
        raise DeclarationError(
            f"{decorator}({_name(operation)}): decorate {_name(operation)} with @undoable or "
            "@irreversible first"
        )
    return spec.name
