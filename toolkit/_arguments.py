"""Validation of tool arguments against the function's signature, with field-level errors."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from hatp_journal.toolkit.errors import ErrorCode, JournalError


class InvalidArguments(JournalError):
    """The arguments don't fit the tool's signature; ``data["fields"]`` names the fields."""

    code = ErrorCode.INVALID_ARGUMENTS


def arguments_model(name: str, function: Callable[..., Any], skip: str | None) -> type[BaseModel]:
    """A pydantic model of ``function``'s parameters, without the injected ``skip`` one."""
    hints = dict(getattr(function, "__annotations__", {}))
    with contextlib.suppress(NameError):
        hints = inspect.get_annotations(function, eval_str=True)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name == skip or parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        ):
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def validate_arguments(
    tool: str, model: type[BaseModel], arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Validated keyword arguments, or :class:`InvalidArguments` naming every bad field."""
    try:
        parsed = model.model_validate(dict(arguments or {}))
    except ValidationError as error:
        problems = [
            {
                "field": ".".join(str(part) for part in item["loc"]) or "(arguments)",
                "problem": item["msg"],
            }
            for item in error.errors()
        ]
        listed = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        raise InvalidArguments(
            f"invalid arguments for {tool}: {listed}",
            fields=[p["field"] for p in problems],
            problems=problems,
        ) from None
    return {name: getattr(parsed, name) for name in type(parsed).model_fields}
