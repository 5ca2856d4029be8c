"""Planning the undo of a call that wrote several resources (``effect.also``).

Its server's ``check`` answers for each resource (``resources``). A resource in conflict is the
run's own doing when a later step of the run wrote it, every later write followed on from the one
before, and it is now as the run's latest write left it: that later step is a dependency, undone
first. Only the others are conflicts, each named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hatp_journal.recorder.changes.steps import Chains, Step
from hatp_journal.toolkit.wire import FieldChange, ResourceFound, UndoAnswer, conflict_words


def several_conflicts(
    step: Step, read: UndoAnswer, chains: Chains, answers: Mapping[str, Any]
) -> tuple[bool, Step | None, str, list[FieldChange]]:
    """(every conflict is the run's own, the first later step it waits for, the message, the changes)
    for a step whose check answered a conflict on one or more of its resources."""
    conflicts = [found for found in read.resources or () if found.status == "conflict"]
    said: list[str] = []
    changes: list[FieldChange] = []
    first_after: Step | None = None
    for found in conflicts:
        after = chains.next(step, found.resource)
        gap = chains.gap(step, found.resource)
        if (
            after is not None
            and gap is None
            and _left_by_the_run(found, chains.newest(step, found.resource), answers)
        ):
            first_after = first_after or after
            continue
        if gap is not None:
            written = gap.written(found.resource)
            expected = written.before if written else None
            said.append(f"{found.resource}: changed outside the run before {gap.id} (expected {expected})")
        else:
            words = conflict_words([found])
            if after is not None:
                words = (
                    f"{found.resource}: this run's step {after.number} ({after.id}) changed it later: "
                    f"a dependency, undone first; then {words.removeprefix(found.resource + ': ')}"
                )
            said.append(words)
        changes = changes or list(found.changes)
    if not said:
        return True, first_after, read.message, []
    return False, None, "; ".join(said), changes


def _left_by_the_run(found: ResourceFound, newest: Step, answers: Mapping[str, Any]) -> bool:
    """Whether the resource is now as the run's own latest write of it left it: its version is the
    one that write left, or that write's own check found nothing changed since."""
    written = newest.written(found.resource)
    if written is not None and found.version_found is not None and found.version_found == written.version:
        return True
    latest = answers.get(newest.id)
    return isinstance(latest, dict) and latest.get("status") == "ok"
