"""Changing who may undo, for the tests of an approved undo that checks its approver's authority again
(tests/recorder/undo and the approver's pages, tests/recorder/web): edits of the organisation's
directory, a plan approved by Lee and not run yet, and the ``undo-halted`` entries it leaves."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo import UndoCode, decide_plan, find_plan
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url
from support.undo_org import LEAD, LEE, Org

HALTED = "undo-halted"
NO_LONGER = f"hatp-recorder: {UndoCode.APPROVER_NO_LONGER_AUTHORIZED}: "

People = list[dict[str, Any]]


def edit_directory(org: Org, change: Callable[[People], None]) -> None:
    path = org.root / "directory.json"
    directory = json.loads(path.read_text())
    change(directory["people"])
    path.write_text(json.dumps(directory))


def lee(people: People) -> dict[str, Any]:
    return next(p for p in people if p["id"] == LEE)


def without_lee(people: People) -> None:
    people.remove(lee(people))


def without_lees_role(people: People) -> None:
    lee(people)["roles"] = []


def with_a_new_key_for_lee(people: People) -> None:
    lee(people)["publicKey"] = b64url(SigningKey.generate().public.raw())


def approved_not_run(org: Org, run: str) -> str:
    """A plan to undo all of ``run``, approved by Lee (counted), and not run yet: its ref."""
    ref, _ = org.plan(run, "--from", "1")
    store = org.store()
    try:
        decided = decide_plan(
            store,
            ref,
            "approve",
            person=LEE,
            key=SigningKey.from_file(Path(org.key(LEE))),
            directory=Directory.load(org.root / "directory.json"),
            undo_authority=LEAD,
            fresh=find_plan(store, ref).plan,
            now=utc_now(),
        )
    finally:
        store.dispose()
    assert decided.counted, decided.message
    return ref


def halts(org: Org, run: str) -> list[Entry]:
    return [e for e in org.entries(run) if e.kind == HALTED]
