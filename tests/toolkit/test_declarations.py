"""Decorators attach a frozen spec, return the function, and refuse misuse at once."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import FastMCP
from pydantic import BaseModel

from hatp_journal.toolkit import (
    DeclarationError,
    Effect,
    Journal,
    ResourceState,
    SigningKey,
    Tx,
    Undone,
    compensates,
    irreversible,
    previews,
    read_only,
    undoable,
)
from hatp_journal.toolkit._spec import OperationSpec, spec_of


class Payload(BaseModel):
    value: str


def state(resource: str, tx: Tx) -> ResourceState:
    return ResourceState(version="v1")


def test_the_decorator_returns_the_function_itself_and_it_stays_callable() -> None:
    def rename(name: str) -> str:
        return name.upper()

    decorated = undoable(window="P1D")(rename)

    assert decorated is rename
    assert rename("x") == "X"
    spec = spec_of(rename)
    assert isinstance(spec, OperationSpec)
    assert spec.kind == "compensate"
    assert spec.window is not None
    assert spec.window.days == 1
    with pytest.raises(AttributeError):
        spec.kind = "none"  # type: ignore[misc]


def test_declaring_a_function_twice_is_refused_with_the_fix() -> None:
    @undoable(window="P1D")
    def op() -> None: ...

    with pytest.raises(DeclarationError, match="already declared by @undoable"):
        irreversible(reason="gone")(op)


@pytest.mark.parametrize("window", [0, -5, "P0D", "PT0S", "P1M", "P1Y", "7 days", "P", "PT"])
def test_a_window_that_is_not_a_positive_duration_is_refused(window: Any) -> None:
    with pytest.raises(DeclarationError, match="window"):
        undoable(window=window)


def test_an_undoable_tool_without_a_compensation_is_refused_at_registration(tmp_path: Any) -> None:
    @undoable(window="P1D")
    def op(tx: Tx) -> Effect: ...

    journal = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "j.db")
    with pytest.raises(DeclarationError, match=r"@compensates\(op, state=...\)"):
        journal.add(op)


def test_a_compensation_that_cannot_take_the_payload_is_refused_at_decoration() -> None:
    @undoable(window="P1D")
    def op(tx: Tx) -> Effect: ...

    with pytest.raises(DeclarationError, match="can't take the stored payload"):

        @compensates(op, state=state)
        def takes_nothing(tx: Tx) -> Undone: ...

    with pytest.raises(DeclarationError, match="can't take the stored payload"):

        @compensates(op, state=state)
        def wants_more(payload: Payload, extra: str, tx: Tx) -> Undone: ...

    with pytest.raises(DeclarationError, match="annotate it with a pydantic model"):

        @compensates(op, state=state)
        def wrong_type(payload: int, tx: Tx) -> Undone: ...


def test_a_compensation_for_an_irreversible_or_undeclared_tool_is_refused() -> None:
    @irreversible(reason="delivered to external recipients")
    def send() -> None: ...

    def plain() -> None: ...

    with pytest.raises(DeclarationError, match="irreversible"):
        compensates(send, state=state)
    with pytest.raises(DeclarationError, match="with @undoable"):
        compensates(plain, state=state)


def test_irreversible_needs_a_reason_and_side_effects_need_a_list() -> None:
    with pytest.raises(DeclarationError, match="reason"):
        irreversible(reason=" ")
    with pytest.raises(DeclarationError, match="list"):
        undoable(window="P1D", side_effects="attendees get a cancellation notice")


def test_async_tools_are_refused_with_the_fix() -> None:
    async def op() -> None: ...

    with pytest.raises(DeclarationError, match="Remove 'async'"):
        read_only()(op)


def test_a_preview_must_take_the_same_parameters_as_its_tool() -> None:
    @irreversible(reason="gone")
    def send(to: str, tx: Tx) -> None: ...

    with pytest.raises(DeclarationError, match="same parameters"):

        @previews(send)
        def preview(recipient: str, tx: Tx) -> Effect: ...


def test_a_bad_cost_is_refused_with_an_example() -> None:
    with pytest.raises(DeclarationError, match=r"2\.50"):

        @undoable(window="P1D", cost={"amount": "two", "currency": "USD"})
        def op() -> None: ...


def test_a_function_without_a_declaration_cannot_be_registered(tmp_path: Any) -> None:
    def plain() -> None: ...

    journal = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "j.db")
    with pytest.raises(DeclarationError, match="no journal declaration"):
        journal.add(plain)


def test_an_irreversible_tool_that_acts_through_a_user_interface_declares_via_ui(tmp_path: Any) -> None:
    @irreversible(reason="the customer receives it", remedy="send a credit note", via="ui")
    def send_invoice(invoice_id: str) -> dict[str, str]:
        return {"sent": invoice_id}

    journal = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "j.db")
    journal.add(send_invoice)
    declaration = journal.declaration("send_invoice").wire()

    assert declaration["undo"] == {"kind": "none", "via": "ui", "sideEffects": []}
    assert declaration["reason"] == "the customer receives it"
    assert journal.invoke("send_invoice", {"invoice_id": "INV-1"}).journal.undo.via == "ui"  # type: ignore[union-attr]


def test_two_tools_with_the_same_name_are_refused_at_registration(tmp_path: Any) -> None:
    @irreversible(reason="sends a message", name="send")
    def send_email(to: str) -> None: ...

    @irreversible(reason="sends a message", name="send")
    def send_sms(to: str) -> None: ...

    journal = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "j.db")
    with pytest.raises(DeclarationError, match="two tools are named 'send'; pass name="):
        journal.add(send_email, send_sms)


def test_a_compensation_registered_without_its_tool_or_twice_is_refused(tmp_path: Any) -> None:
    @undoable(window="P1D")
    def op(tx: Tx) -> Effect: ...

    @compensates(op, state=state)
    def undo_op(payload: Payload, tx: Tx) -> Undone: ...

    @compensates(op, state=state)
    def undo_op_again(payload: Payload, tx: Tx) -> Undone: ...

    alone = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "a.db")
    with pytest.raises(DeclarationError, match="belongs to op, which was not registered"):
        alone.add(undo_op)
    twice = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "b.db")
    with pytest.raises(DeclarationError, match="op already has a CompensationSpec; keep one"):
        twice.add(op, undo_op, undo_op_again)


def test_a_state_reader_of_the_wrong_shape_is_refused_at_decoration() -> None:
    @undoable(window="P1D")
    def op(tx: Tx) -> Effect: ...

    def reads_two(resource: str, version: str, tx: Tx) -> ResourceState: ...

    with pytest.raises(DeclarationError, match=r"state reader for op .*def state\(resource: str, tx: Tx\)"):
        compensates(op, state=reads_two)
    with pytest.raises(DeclarationError, match="state reader for op must be a function"):
        compensates(op, state="kv_state")  # type: ignore[arg-type]


def test_a_tool_with_two_tx_parameters_is_refused() -> None:
    def op(first: Tx, second: Tx) -> Effect: ...

    with pytest.raises(DeclarationError, match="take at most one Tx parameter"):
        undoable(window="P1D")(op)


def test_a_preview_of_a_read_only_tool_is_refused() -> None:
    @read_only()
    def peek(key: str) -> str: ...

    with pytest.raises(DeclarationError, match="previews are for @undoable or @irreversible tools"):
        previews(peek)


def test_a_journal_registers_its_tools_once(tmp_path: Any) -> None:
    @read_only()
    def peek(key: str) -> str: ...

    journal = Journal("test://x", key=SigningKey.generate(), store=tmp_path / "j.db")
    journal.register(FastMCP("x"), peek)

    with pytest.raises(DeclarationError, match="register\\(\\) was already called"):
        journal.register(FastMCP("x"), peek)


def test_read_only_works_bare_and_called_as_fastmcp_tool_does() -> None:
    @read_only
    def bare(deal_id: str) -> str:
        return deal_id

    @read_only()
    def called(deal_id: str) -> str:
        return deal_id

    for function in (bare, called):
        spec = spec_of(function)
        assert isinstance(spec, OperationSpec)
        assert spec.read
        assert spec.kind is None
    assert bare("D-1") == "D-1"


def test_bare_undoable_and_irreversible_are_refused_with_what_to_write() -> None:
    def update_deal() -> None: ...

    with pytest.raises(DeclarationError, match=r'@undoable\(window="P7D"\) above update_deal'):
        undoable(update_deal)
    with pytest.raises(DeclarationError, match=r"@undoable\(window="):
        undoable()
    with pytest.raises(DeclarationError, match=r"@irreversible\(reason=.*above update_deal"):
        irreversible(update_deal)
    with pytest.raises(DeclarationError, match="reason"):
        irreversible()
    assert spec_of(update_deal) is None
