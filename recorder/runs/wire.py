"""What an agent's host may put in a call's ``_meta`` for the Recorder, and what the Recorder answers in
``_meta["hatp/recorder"]``: the JSON Schemas ``docs/schema/recorder-call-meta.schema.json`` and
``recorder-answer-meta.schema.json`` (``python -m hatp_journal.recorder.runs.wire [DIR]``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hatp_journal.recorder.config import RUN_KEY_SHAPE
from hatp_journal.toolkit.schema import render

CALL_SCHEMA = "recorder-call-meta.schema.json"
ANSWER_SCHEMA = "recorder-answer-meta.schema.json"


class CallMeta(BaseModel):
    """The members of a ``tools/call`` request's ``_meta`` the Recorder reads (others pass unread)."""

    model_config = ConfigDict(extra="allow", title="Recorder call _meta")

    run_key: str | None = Field(
        default=None,
        alias="hatp/runKey",
        pattern=RUN_KEY_SHAPE.pattern,
        description="Continue the run this key names (as issued in runKey, or set by the host)",
    )
    wait: float | None = Field(
        default=None,
        alias="hatp/wait",
        ge=0,
        description="Seconds to hold the call open if it is held for a person (capped at max_wait_seconds)",
    )
    host: dict[str, Any] | None = Field(
        default=None, alias="hatp/host", description='What the call relied on: {"uses": ["e2"]}'
    )
    idempotency_key: str | None = Field(
        default=None,
        alias="hatp/idempotencyKey",
        min_length=1,
        max_length=255,
        description="Names this call for retries: a call with a key answered before gets that answer again",
    )


class WaitSaid(BaseModel):
    """What became of an asked wait that was not taken as asked."""

    model_config = ConfigDict(extra="forbid")

    seconds: float = Field(ge=0, description="How long the call was held open")
    asked: float | str | None = Field(description="What hatp/wait said")
    capped: bool | None = Field(default=None, description="The wait asked for was above max_wait_seconds")
    ignored: bool | None = Field(default=None, description="hatp/wait was not a number of seconds")


class AnswerMeta(BaseModel):
    """``_meta["hatp/recorder"]`` of every answer the agent gets from the Recorder."""

    model_config = ConfigDict(extra="allow", title="Recorder answer _meta", populate_by_name=True)

    run: str | None = Field(default=None, description="The run the call was journaled in")
    entry: str | None = Field(default=None, description="The entry that journaled it")
    run_key: str | None = Field(
        default=None, alias="runKey", description="Send back as _meta hatp/runKey to continue this run"
    )
    wait: WaitSaid | None = None
    status: str | None = Field(default=None, description="pending_approval while a person decides")
    ask: str | None = Field(default=None, description="The ask a pending call waits on")
    code: str | None = Field(default=None, description="Why the call was refused (a stable code)")
    replayed: bool | None = Field(
        default=None, description="A retry: the answer the first call got (entry), not made again"
    )


def write_schemas(directory: Path) -> list[Path]:
    """Write both schemas into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in ((CALL_SCHEMA, CallMeta), (ANSWER_SCHEMA, AnswerMeta)):
        path = directory / name
        path.write_text(render(model.model_json_schema(by_alias=True)), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schema")):
        print(written)
