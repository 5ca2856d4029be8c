"""A class override that lowers a class is a person's decision: its ``by`` must be someone in the
organisation's directory holding the role the policy names for it (``classAuthority``, else the
``undoAuthority``). Checked when the policy is loaded, each problem at the line of its ``by``."""

from __future__ import annotations

from pathlib import Path

from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.file_places.locate import KeyMap
from hatp_journal.recorder.file_places.problems import Problem
from hatp_journal.recorder.policy.classes import RClass, rank
from hatp_journal.recorder.policy.model import ClassOverride, Policy
from hatp_journal.recorder.policy.registry import Registry


def may_lower(override: ClassOverride, registry: Registry) -> bool:
    """Whether ``override`` can lower the class of some call: it is below the worst class the
    registry gives the tool, or below R4 for a tool the registry does not list (then the server's
    word, or nothing, decides, and the class can be R4)."""
    record = registry.record_for(override.server)
    worst: RClass | None = record.worst_class(override.tool) if record is not None else None
    return rank(override.rclass) < rank(worst or "R4")


def override_problems(
    policy: Policy, registry: Registry, keys: KeyMap, directory: str | Path | None
) -> list[Problem]:
    """Each lowering override whose ``by`` is not a person holding the policy's class authority."""
    lowering = [(i, o) for i, o in enumerate(policy.class_overrides) if may_lower(o, registry)]
    if not lowering:
        return []
    role = policy.class_authority or policy.undo_authority
    problems = []
    people = _directory(directory) if directory is not None and role is not None else None
    for index, override in lowering:
        where = keys.position_of(("classOverrides", index, "by"))
        said = f"classOverrides.{index}.by: lowering {override.server}/{override.tool} to {override.rclass} "
        if role is None:
            said += "needs a person holding a role the policy names: give classAuthority (or undoAuthority)"
        elif people is None:
            said += f"needs {override.by!r} checked against the directory ([recorder] directory is not set)"
        else:
            refusal = _refusal(people, override.by, role)
            if refusal is None:
                continue
            said += f"is not {override.by}'s decision to make: {refusal}"
        problems.append(Problem(where.line, where.column, said))
    return problems


def _directory(path: str | Path) -> dict[str, list[str]]:
    """Each person's id with their roles (a directory that can't be read raises DirectoryError)."""
    return {person.id: list(person.roles) for person in Directory.load(Path(path)).people}


def _refusal(people: dict[str, list[str]], person: str, role: str) -> str | None:
    roles = people.get(person)
    if roles is None:
        return f"{person} is not in the directory"
    if role not in roles:
        return f"{person} does not hold {role}"
    return None
