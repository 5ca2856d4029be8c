"""A pydantic validation's errors as problems at the line and column of the key each is about.

Shared by the policy file, the registry and the directory: each reads its JSON or TOML with a key map
(:mod:`hatp_journal.recorder.file_places.locate`) and says what is wrong where.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from hatp_journal.recorder.file_places.locate import KeyMap


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file a person wrote (a policy, a registry, a directory), at a 1-based
    line and column."""

    line: int
    column: int
    message: str


def problems_of(keys: KeyMap, error: ValidationError) -> list[Problem]:
    """Each of a validation's errors at the line of the key it is about."""
    return [_problem(keys, detail) for detail in error.errors()]


def _problem(keys: KeyMap, detail: ErrorDetails) -> Problem:
    where = keys.position_of(tuple(detail["loc"]))
    dotted = ".".join(str(part) for part in detail["loc"]) or "(top level)"
    if detail["type"] == "extra_forbidden":
        message = f"{dotted}: unknown key"
    elif detail["type"] == "missing":
        message = f"{dotted}: required key is missing"
    else:
        said = detail["msg"].removeprefix("Value error, ")  # pydantic's prefix to a validator's own words
        message = f"{dotted}: {said}{_got(detail['input'])}"
    return Problem(where.line, where.column, message)


def _got(value: Any) -> str:
    # Show the offending value when it is short enough to read in one line.
    if isinstance(value, dict | list):
        return f" (got a JSON {'object' if isinstance(value, dict) else 'array'})"
    shown = json.dumps(value)
    return f" (got {shown})" if len(shown) <= 60 else ""
