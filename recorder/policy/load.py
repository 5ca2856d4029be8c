"""Read a policy file, refusing anything doubtful with the file and line it is on."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from hatp_journal._shared.files import FileProblem, read_text
from hatp_journal.recorder.file_places.locate import KeyMap, LocateError, located
from hatp_journal.recorder.file_places.problems import Problem, problems_of
from hatp_journal.recorder.policy.attestations import AttestationFileError
from hatp_journal.recorder.policy.classes import rank
from hatp_journal.recorder.policy.errors import PolicyFileError
from hatp_journal.recorder.policy.model import Policy
from hatp_journal.recorder.policy.override_people import override_problems
from hatp_journal.recorder.policy.registry import Registry, RegistryFileMissing


def load_policy(path: str | Path, *, directory: str | Path | None = None) -> Policy:
    """Load and validate the policy file at ``path``.

    Raises :class:`PolicyFileError` naming the line for unreadable, empty, too large, not UTF-8 or
    too deeply nested files, JSON syntax errors, duplicate keys, unknown keys, wrong types and
    unknown actions, and for a class override that lowers a class without a person of
    ``directory`` (the people file, ``[recorder] directory``) holding the class authority.
    """
    try:
        text = read_text(path)
    except FileProblem as problem:
        raise PolicyFileError(path, [Problem(problem.line or 1, problem.column, problem.message)]) from None
    return parse_policy(text, source=str(path), base=Path(path).parent, directory=directory)


def parse_policy(
    text: str, *, source: str = "<policy>", base: Path | None = None, directory: str | Path | None = None
) -> Policy:
    """Validate policy JSON given as text; ``source`` names it in errors. The attestation files it
    names are read now, relative to ``base`` (default: the working directory); a lowering class
    override is checked against ``directory`` (:mod:`.override_people`)."""
    try:
        keys = located(text, source)
    except LocateError as error:
        problem = Problem(error.position.line, error.position.column, error.message)
        raise PolicyFileError(source, [problem]) from None
    try:
        # Strict, and by alias only: the file is exactly the documented shape, no coercion, no snake_case.
        policy = Policy.model_validate_json(text, strict=True, by_alias=True, by_name=False)
    except ValidationError as error:
        raise PolicyFileError(source, problems_of(keys, error)) from None
    try:
        policy.attested(base)
    except AttestationFileError as error:
        at: tuple[str | int, ...] = ("files", error.index) if error.index >= 0 else ("signer",)
        position = keys.position_of(("autonomy", "attestations", *at))
        raise PolicyFileError(source, [Problem(position.line, position.column, str(error))]) from None
    try:
        registry = policy.host_registry(base)
    except RegistryFileMissing as error:
        position = keys.position_of(("registry", "files", error.index))
        raise PolicyFileError(source, [Problem(position.line, position.column, str(error))]) from None
    problems = _registry_problems(policy, registry, keys)
    problems += override_problems(policy, registry, keys, directory)
    if problems:
        raise PolicyFileError(source, problems)
    return policy


def _registry_problems(policy: Policy, registry: Registry, keys: KeyMap) -> list[Problem]:
    """Servers mapped to registry ids nobody ships, and class overrides that lower a disclosure."""
    problems = []
    for server, named in policy.registry.servers.items():
        if named not in registry.records:
            where = keys.position_of(("registry", "servers", server))
            known = ", ".join(sorted(registry.records))
            said = f"registry.servers.{server}: no registry file for {named!r} (known: {known})"
            problems.append(Problem(where.line, where.column, said))
    for index, override in enumerate(policy.class_overrides):
        if registry.is_disclosure(override.server, override.tool) and rank(override.rclass) < rank("R4"):
            where = keys.position_of(("classOverrides", index, "class"))
            said = (
                f"classOverrides.{index}.class: {override.server}/{override.tool} is a disclosure; "
                f"an override cannot lower it to {override.rclass}"
            )
            problems.append(Problem(where.line, where.column, said))
    return problems
