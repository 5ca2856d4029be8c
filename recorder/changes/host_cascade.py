"""What a host undo's inverse call would also remove through the server's own cascade.

A registry may say that an inverse removes more than its arguments name (``cascade``: server-memory's
delete_entities also deletes every relation that names a deleted entity). Before the inverse runs,
the host looks in the state it just read for the elements the cascade would take: each one the call
itself did not add (by the snapshot before the call and the state after it) existed before the
call, or came from someone else since, and the undo must not remove it. Such an undo is a conflict
naming each element by its RFC 6901 path; nothing runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.changes.host_diff import ABSENT, only_in, pointer, shown
from hatp_journal.recorder.policy.registry_compensation import Cascade, TemplateError, pointer_steps, render

DID_NOT_MAKE = "which the call did not make"
"""The words a cascade conflict's message says of each element it would have removed."""


def rendered(cascades: tuple[Cascade, ...], data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cascades as the call entry records them: the values rendered now, from the call's data.
    A template that renders to no array of values is a :class:`TemplateError`."""
    found = []
    for cascade in cascades:
        values = render(cascade.of, data)
        values = values if isinstance(values, list) else [values]
        if any(isinstance(value, (dict, list)) for value in values):
            raise TemplateError(f"cascade {cascade.path}: {cascade.of} does not name plain values")
        found.append({"path": cascade.path, "matchAny": list(cascade.match_any), "values": values})
    return found


def would_remove(member: Mapping[str, Any], found: Any) -> list[dict[str, Any]]:
    """The elements of ``found`` the recorded cascades would remove that the call did not add, as
    changes (``field`` the element's path, ``expected`` the element, ``now`` absent)."""
    cascades = member.get("cascade")
    if not isinstance(cascades, list):
        return []
    made = only_in(member.get("afterState"), member.get("snapshot"))
    taken: list[dict[str, Any]] = []
    for cascade in cascades:
        if not _well_formed(cascade):  # a stored entry is read as it is: skip what no Recorder wrote
            continue
        steps = pointer_steps(cascade["path"])
        values = {_key(value) for value in cascade["values"]}
        own = Counter(_key(element) for element in _at(made, steps))
        for index, element in enumerate(_at(found, steps)):
            if not isinstance(element, dict):
                continue
            if not any(name in element and _key(element[name]) in values for name in cascade["matchAny"]):
                continue
            if own[_key(element)]:  # the call's own element: its undo removes it
                own[_key(element)] -= 1
                continue
            field = pointer((*steps, index))
            taken.append({"field": field, "expected": shown(element), "now": ABSENT})
    return taken


def refusal(resource: str, tool: str, taken: list[dict[str, Any]]) -> str:
    """Why the undo did not run, naming each element it would have removed."""
    named = "; ".join(f"{c['field']} {_text(c['expected'])}" for c in taken)
    return (
        f"undoing it would also remove {named}, {DID_NOT_MAKE}: {tool} deletes those with it; "
        f"the host did not run it and {resource} is unchanged"
    )


def _well_formed(cascade: Any) -> bool:
    return (
        isinstance(cascade, dict)
        and isinstance(cascade.get("path"), str)
        and isinstance(cascade.get("values"), list)
        and isinstance(cascade.get("matchAny"), list)
        and all(isinstance(name, str) for name in cascade["matchAny"])
    )


def _at(value: Any, steps: tuple[str, ...]) -> list[Any]:
    for step in steps:
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return []
    return value if isinstance(value, list) else []


def _key(value: Any) -> bytes:
    try:
        return canonical_bytes(value)
    except (TypeError, ValueError):
        return repr(value).encode()


def _text(value: Any) -> str:
    try:
        return canonical_bytes(value).decode()
    except (TypeError, ValueError):
        return repr(value)
