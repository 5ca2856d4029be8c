"""The suite's own reader of an exported Run Record (``hatp-run-record/2``, published as
``docs/schema/run-record.schema.json``).

The suite reads only what its Recorder checks need (the run's id, and each entry's id, run, kind,
body and hash links) with these models of its own, so that it never parses a record with the code
of the Recorder it judges. Every other field is left to the Recorder's verifier. A test holds these
models to the published schema: each field read here is in it, required there if required here,
with the same JSON type.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

RECORD_FORMAT: Final = "hatp-run-record/2"


class _Read(BaseModel):
    """camelCase on the wire; fields the suite does not read are ignored, not refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class RunInfo(_Read):
    """The record's ``run``."""

    id: str = Field(min_length=1)


class RecordEntry(_Read):
    """One entry of ``entries``: ``hash`` covers the entry, ``prevHash`` links it to the one before."""

    id: str
    run: str
    seq: int = Field(ge=1)
    kind: str = Field(min_length=1)
    body: dict[str, Any]
    prev_hash: str
    hash: str


class RunRecord(_Read):
    """An exported Run Record, as far as the suite reads it."""

    format: Literal["hatp-run-record/2"] = RECORD_FORMAT
    run: RunInfo
    entries: list[RecordEntry]
