"""Decorators that declare an operation's undo terms (protocol.md §2) and register its undo.

Each decorator attaches a frozen spec to the function and returns the function
itself, so it stays a plain callable in tests. Misuse fails here, at decoration
time, with a message that shows the fix.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, TypeVar, get_type_hints, overload

from pydantic import BaseModel

from hatp_journal._shared.durations import parse_window
from hatp_journal.toolkit._after_commit import ActionSpec
from hatp_journal.toolkit._effects import SPEC_ATTR, Tx
from hatp_journal.toolkit.errors import DeclarationError
from hatp_journal.toolkit.wire import Money, Via

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class OperationSpec:
    """The declaration of one journaled tool."""

    name: str
    function: Callable[..., Any]
    kind: Literal["compensate", "none"] | None
    read: bool = False
    window: timedelta | None = None
    via: Via = "api"
    side_effects: tuple[str, ...] = ()
    cost: Money | None = None
    reason: str | None = None
    remedy: str | None = None
    charges: bool = False
    idempotent: bool = False
    open_world: bool = False
    tx_param: str | None = None


@dataclass(frozen=True)
class CompensationSpec:
    """A compensation registered for an operation, with the reader of its resource's state."""

    operation: OperationSpec
    function: Callable[..., Any]
    state: Callable[..., Any]
    payload_type: type[BaseModel] | None
    tx_param: str | None


@dataclass(frozen=True)
class PreviewSpec:
    """A dry run of an operation that returns the effect the real call would (protocol.md §10)."""

    operation: OperationSpec
    function: Callable[..., Any]
    tx_param: str | None


@dataclass(frozen=True)
class SampleSpec:
    """Makes sample arguments for an operation (test-only surface, see ``toolkit.samples``)."""

    operation: str
    function: Callable[..., Any]
    tx_param: str | None


@dataclass(frozen=True)
class OutsideEditSpec:
    """Changes an operation's resource as someone outside the agent's run would (test-only)."""

    operation: str
    function: Callable[..., Any]
    tx_param: str | None


AnySpec = OperationSpec | CompensationSpec | PreviewSpec | SampleSpec | OutsideEditSpec | ActionSpec


def spec_of(function: Callable[..., Any]) -> AnySpec | None:
    """The spec a decorator attached to ``function``, if any."""
    found = getattr(function, SPEC_ATTR, None)
    kinds = OperationSpec | CompensationSpec | PreviewSpec | SampleSpec | OutsideEditSpec | ActionSpec
    return found if isinstance(found, kinds) else None


def undoable(
    function: Callable[..., Any] | None = None,
    /,
    *,
    window: str | int | timedelta | None = None,
    via: Via = "api",
    side_effects: Iterable[str] = (),
    cost: Money | Mapping[str, str] | None = None,
    charges: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    name: str | None = None,
) -> Callable[[F], F]:
    """Declare a tool whose effect a registered compensation can undo within ``window``.

    Example::

        @undoable(window="P7D")
        def update_deal(deal_id: str, stage: str, tx: Tx) -> Effect: ...
    """
    if function is not None or window is None:
        target = f" above {_name(function)}" if function is not None else ""
        raise DeclarationError(
            f'@undoable needs the window its undo stays possible: write @undoable(window="P7D"){target}'
        )
    try:
        parsed = parse_window(window)
    except ValueError as error:
        raise DeclarationError(f"@undoable(window={window!r}): {error}") from None
    effects = _side_effects(side_effects, "@undoable")

    def attach(function: F) -> F:
        spec = OperationSpec(
            name=name or function.__name__,
            function=function,
            kind="compensate",
            window=parsed,
            via=via,
            side_effects=effects,
            cost=_money(cost, function),
            charges=charges,
            idempotent=idempotent,
            open_world=open_world,
            tx_param=_tx_param(function, "@undoable"),
        )
        return _attach(function, spec, "@undoable")

    return attach


def irreversible(
    function: Callable[..., Any] | None = None,
    /,
    *,
    reason: str | None = None,
    remedy: str | None = None,
    charges: bool = False,
    read: bool = False,
    open_world: bool = True,
    via: Via = "api",
    name: str | None = None,
) -> Callable[[F], F]:
    """Declare a tool whose effect cannot be undone, saying why (protocol.md §2).

    ``remedy`` is suggested to the human in every plan; it is never performed by itself.
    ``via="ui"`` says the tool acts through an app's user interface, which the policy may gate
    (protocol.md §6, §7) whether or not the action can be undone.
    """
    if function is not None or not isinstance(reason, str) or not reason.strip():
        target = f" above {_name(function)}" if function is not None else ""
        raise DeclarationError(
            "@irreversible needs a reason a person can read, "
            f'e.g. @irreversible(reason="delivered to external recipients"){target}'
        )
    said: str = reason

    def attach(function: F) -> F:
        spec = OperationSpec(
            name=name or function.__name__,
            function=function,
            kind="none",
            read=read,
            via=via,
            reason=said,
            remedy=remedy,
            charges=charges,
            open_world=open_world,
            tx_param=_tx_param(function, "@irreversible"),
        )
        return _attach(function, spec, "@irreversible")

    return attach


@overload
def read_only(function: F, /) -> F: ...


@overload
def read_only(*, name: str | None = None, open_world: bool = False) -> Callable[[F], F]: ...


def read_only(
    function: F | None = None, /, *, name: str | None = None, open_world: bool = False
) -> F | Callable[[F], F]:
    """Declare a tool that only reads and changes nothing; ``@read_only`` and ``@read_only()`` alike
    (as FastMCP's ``@tool``)."""

    def attach(function: F) -> F:
        spec = OperationSpec(
            name=name or function.__name__,
            function=function,
            kind=None,
            read=True,
            idempotent=True,
            open_world=open_world,
            tx_param=_tx_param(function, "@read_only"),
        )
        return _attach(function, spec, "@read_only")

    return attach if function is None else attach(function)


@overload
def after_commit_action(function: F, /) -> F: ...


@overload
def after_commit_action(*, name: str | None = None) -> Callable[[F], F]: ...


def after_commit_action(function: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Declare work that runs after a call's commit and must not be lost (e.g. a mail).

    ``tx.after_commit(action, data)`` then records it in the call's transaction; it is called as
    ``action(data)`` after the commit and retried with backoff until it succeeds or a person
    drops it. ``data`` reaches it as the pydantic model its parameter names, or as a dict.
    ``name`` (default: the function's name) is what the store keeps: keep it stable.
    """

    def attach(action: F) -> F:
        _check_arity(action, 1, f"after-commit action {_name(action)}", "def action(data: MyData) -> None")
        hint = _hints(action).get(next(iter(inspect.signature(action).parameters)))
        data_type = hint if isinstance(hint, type) and issubclass(hint, BaseModel) else None
        spec = ActionSpec(name or action.__name__, action, data_type)
        return _attach(action, spec, "@after_commit_action")

    return attach if function is None else attach(function)


def compensates(operation: Callable[..., Any], *, state: Callable[..., Any]) -> Callable[[F], F]:
    """Register the decorated function as the undo of ``operation``.

    The compensation is called as ``compensation(payload, tx)`` with the payload
    the tool's :class:`Effect` stored, and returns :class:`Undone`. ``state`` is
    called as ``state(resource, tx)`` and returns the :class:`ResourceState` the
    toolkit compares with ``ifVersion`` before, and with ``effect.before`` after.
    """
    target = spec_of(operation)
    if not isinstance(target, OperationSpec):
        raise DeclarationError(
            f"@compensates({_name(operation)}): decorate {_name(operation)} with @undoable(window=...) first"
        )
    if target.kind != "compensate":
        raise DeclarationError(
            f"@compensates({target.name}): {target.name} is declared "
            f"{'read-only' if target.read else 'irreversible'}; only @undoable operations "
            "take a compensation"
        )
    _check_arity(state, 1, f"state reader for {target.name}", "def state(resource: str, tx: Tx)")

    def attach(function: F) -> F:
        _check_arity(
            function,
            1,
            f"compensation {_name(function)}",
            "def undo(payload: MyPayload, tx: Tx) -> Undone",
        )
        spec = CompensationSpec(
            operation=target,
            function=function,
            state=state,
            payload_type=_payload_type(function),
            tx_param=_tx_param(function, "@compensates"),
        )
        return _attach(function, spec, "@compensates")

    return attach


def previews(operation: Callable[..., Any]) -> Callable[[F], F]:
    """Register a dry run of ``operation``: same parameters, returns the :class:`Effect`."""
    target = spec_of(operation)
    if not isinstance(target, OperationSpec) or target.read:
        raise DeclarationError(
            f"@previews({_name(operation)}): previews are for @undoable or @irreversible tools"
        )

    def attach(function: F) -> F:
        ours = _params(function, exclude_tx=True)
        theirs = _params(target.function, exclude_tx=True)
        if ours != theirs:
            raise DeclarationError(
                f"preview {_name(function)} must take the same parameters as {target.name}: "
                f"({', '.join(theirs)}), not ({', '.join(ours)})"
            )
        spec = PreviewSpec(target, function, _tx_param(function, "@previews"))
        return _attach(function, spec, "@previews")

    return attach


def _attach(function: F, spec: AnySpec, decorator: str) -> F:
    if inspect.iscoroutinefunction(function):
        raise DeclarationError(
            f"{decorator} on {_name(function)}: journaled functions are plain (sync) functions; "
            "the toolkit runs them in a worker thread inside a store transaction. "
            "Remove 'async' and use blocking calls."
        )
    existing = spec_of(function)
    if existing is not None:
        raise DeclarationError(
            f"{decorator} on {_name(function)}: it is already declared by "
            f"{_decorator_of(existing)}; keep one declaration per function"
        )
    setattr(function, SPEC_ATTR, spec)
    return function


def _decorator_of(spec: AnySpec) -> str:
    if isinstance(spec, CompensationSpec):
        return "@compensates"
    if isinstance(spec, PreviewSpec):
        return "@previews"
    if isinstance(spec, SampleSpec):
        return "@sample_for"
    if isinstance(spec, OutsideEditSpec):
        return "@outside_edit_for"
    if isinstance(spec, ActionSpec):
        return "@after_commit_action"
    if spec.read and spec.kind is None:
        return "@read_only"
    return "@undoable" if spec.kind == "compensate" else "@irreversible"


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__name__", repr(function))


def _side_effects(values: Iterable[str], decorator: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise DeclarationError(
            f'{decorator}(side_effects=...) takes a list of sentences, e.g. side_effects=["{values}"]'
        )
    return tuple(values)


def _money(cost: Money | Mapping[str, str] | None, function: Callable[..., Any]) -> Money | None:
    if cost is None or isinstance(cost, Money):
        return cost
    try:
        return Money.model_validate(dict(cost))
    except ValueError as error:
        raise DeclarationError(
            f"@undoable on {_name(function)}: cost must look like "
            f'{{"amount": "2.50", "currency": "USD"}}: {error}'
        ) from None


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(function)
    except (NameError, TypeError):
        return dict(getattr(function, "__annotations__", {}))


def _tx_param(function: Callable[..., Any], decorator: str) -> str | None:
    hints = _hints(function)
    names = [name for name, hint in hints.items() if hint is Tx and name != "return"]
    if len(names) > 1:
        raise DeclarationError(f"{decorator} on {_name(function)}: take at most one Tx parameter")
    return names[0] if names else None


def _params(function: Callable[..., Any], *, exclude_tx: bool) -> list[str]:
    tx = _tx_param(function, "") if exclude_tx else None
    return [p for p in inspect.signature(function).parameters if p != tx]


def _check_arity(
    function: Callable[..., Any],
    positional: int,
    what: str,
    shape: str,
    problem: str = "can't take the stored payload",
) -> None:
    """The function must accept ``positional`` arguments (plus an optional Tx) and need no more."""
    if not callable(function):
        raise DeclarationError(f"{what} must be a function shaped like {shape}")
    tx = _tx_param(function, "")
    parameters = [p for p in inspect.signature(function).parameters.values() if p.name != tx]
    takes_positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    required = [
        p for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if (len(takes_positional) < positional and not varargs) or len(required) > positional:
        raise DeclarationError(
            f"{what} {problem}: its signature is "
            f"{_name(function)}{inspect.signature(function)}; shape it like {shape}"
        )


def _payload_type(function: Callable[..., Any]) -> type[BaseModel] | None:
    """The pydantic model the compensation's first parameter expects, if it names one."""
    first = next(iter(inspect.signature(function).parameters))
    hint = _hints(function).get(first)
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return hint
    if hint in (None, Any, dict) or getattr(hint, "__origin__", None) in (dict, Mapping):
        return None
    raise DeclarationError(
        f"compensation {_name(function)} can't take the stored payload: its first parameter "
        f"is annotated {hint!r}; annotate it with a pydantic model or dict[str, Any]"
    )
