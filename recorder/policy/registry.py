"""The host registry: files that classify each tool of one MCP server, with a rationale, the
evidence it was checked against, and narrow argument rules (docs/policy.md, "The host registry").

A file is JSON, read like the policy: through :mod:`hatp_journal._shared.files` (size, UTF-8,
nesting) and :mod:`.locate` (duplicate keys, line numbers), then validated strictly. Anything
doubtful (an unknown class, a rule that does not parse, a rule naming an argument the tool does
not have, a disclosure that is not R4) is refused with the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictBool, ValidationError, model_validator

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.files import FileProblem, read_text
from hatp_journal.recorder.file_places.locate import LocateError, located
from hatp_journal.recorder.file_places.problems import Problem, problems_of
from hatp_journal.recorder.policy.classes import CLASSES as CLASS_RANK
from hatp_journal.recorder.policy.classes import ClassSource, ClassVerdict, RClass, verdict
from hatp_journal.recorder.policy.errors import PolicyFileError
from hatp_journal.recorder.policy.registry_compensation import Compensation, ToolShape
from hatp_journal.recorder.policy.resource_names import ResourceName
from hatp_journal.toolkit.wire import WireModel

FORMAT = "hatp-registry/1"
Predicate = Literal["sql-single-select", "sql-identifier"]
"""The named tests an argument rule may apply: allow-listed, no regular expressions from files."""


class Evidence(WireModel):
    """What a classification was checked against: the server's version and a source file (and line)."""

    version: str = Field(min_length=1)
    source: str = Field(min_length=1, description="file (and :line) of the server the tool was read in")


class ArgumentRule(WireModel):
    """``argument`` passing the test gives ``class`` instead of the tool's; first matching rule wins."""

    argument: str = Field(min_length=1)
    equals: str | int | StrictBool | None = None
    is_: Predicate | None = Field(default=None, alias="is")
    absent: Literal[True] | None = Field(
        default=None, description="passes when the call does not give the argument at all"
    )
    rclass: RClass = Field(alias="class")
    rationale: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_test(self) -> ArgumentRule:
        if [self.equals, self.is_, self.absent].count(None) != 2:
            raise ValueError("give exactly one test: equals, is or absent")
        return self

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the call's ``arguments`` pass this rule's test (a missing argument passes only
        ``absent``; a given one, even null, never does)."""
        if self.absent:
            return self.argument not in arguments
        if self.argument not in arguments:
            return False
        value = arguments[self.argument]
        if self.is_ is not None:
            return isinstance(value, str) and PREDICATES[self.is_](value)
        # bool is an int in Python: `true` must not equal 1.
        return type(value) is type(self.equals) and value == self.equals


class ToolEntry(WireModel):
    """One tool: its base class, why, the evidence, its arguments and the argument rules."""

    rclass: RClass = Field(alias="class")
    rationale: str = Field(min_length=1)
    evidence: Evidence
    disclosure: StrictBool = False
    arguments: tuple[str, ...] = Field(default=(), description="the tool's argument names, as checked")
    rules: tuple[ArgumentRule, ...] = ()
    input_schema: dict[str, Any] | None = Field(
        default=None,
        description="the tool's inputSchema as the server lists it (templates are checked)",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="the tool's outputSchema as the server lists it (templates are checked)",
    )
    compensation: Compensation | None = Field(
        default=None, description="how the host undoes the tool's calls (registry_compensation.py)"
    )

    def shape(self) -> ToolShape:
        """What the file knows of the tool, for checking templates."""
        return ToolShape(self.arguments, self.input_schema, self.output_schema)

    @model_validator(mode="after")
    def _consistent(self) -> ToolEntry:
        if self.disclosure and self.rclass != "R4":
            raise ValueError("a disclosure is R4")
        for rule in self.rules:
            if rule.argument not in self.arguments:
                raise ValueError(f"a rule names the argument {rule.argument!r}, which the tool does not have")
        return self


class PromptEntry(WireModel):
    """One prompt: getting it is a call like any other (``mcp-server-fetch``'s ``fetch`` prompt makes
    a GET), with its class, why, the evidence and the prompt's argument names."""

    rclass: RClass = Field(alias="class")
    rationale: str = Field(min_length=1)
    evidence: Evidence
    disclosure: StrictBool = False
    arguments: tuple[str, ...] = Field(default=(), description="the prompt's argument names, as checked")

    @model_validator(mode="after")
    def _consistent(self) -> PromptEntry:
        if self.disclosure and self.rclass != "R4":
            raise ValueError("a disclosure is R4")
        return self


class ResourceEntry(WireModel):
    """Reading one resource, or every resource a URI template names (:mod:`.resource_names`): its
    class, why and the evidence, as for a prompt."""

    rclass: RClass = Field(alias="class")
    rationale: str = Field(min_length=1)
    evidence: Evidence
    disclosure: StrictBool = False

    @model_validator(mode="after")
    def _consistent(self) -> ResourceEntry:
        if self.disclosure and self.rclass != "R4":
            raise ValueError("a disclosure is R4")
        return self


class ServerInfo(WireModel):
    """Which server the file classifies: its registry id, package and the version reviewed."""

    id: str = Field(min_length=1, description="what a policy's registry.servers names")
    package: str = Field(min_length=1)
    version: str = Field(min_length=1)


class RegistryFile(WireModel):
    """One registry file: one server, each of its tools and the prompts and resources it classifies
    (a prompt or resource it does not name is classed as nothing classifies it: R4)."""

    format: Literal["hatp-registry/1"]
    server: ServerInfo
    status: Literal["draft", "reviewed"]
    reviewed_by: str | None = Field(default=None, min_length=1)
    tools: dict[str, ToolEntry]
    prompts: dict[str, PromptEntry] = Field(default_factory=dict)
    resources: dict[str, ResourceEntry] = Field(
        default_factory=dict, description="by URI, or URI template of {NAME} segments"
    )


@dataclass(frozen=True)
class Record:
    """A loaded registry file, with where it came from and its digest (named in every verdict)."""

    file: RegistryFile
    source: str
    digest: str
    resource_names: tuple[ResourceName, ...] = ()
    """The keys of ``file.resources``, parsed (:func:`parse_record` refuses any that do not parse)."""

    def reads_arguments(self, tool: str) -> bool:
        """Whether a call's arguments can change the class of ``tool`` (it has argument rules)."""
        entry = self.file.tools.get(tool)
        return entry is not None and bool(entry.rules)

    def worst_class(self, tool: str) -> RClass | None:
        """The least recoverable class a call of ``tool`` can get from this file, whatever its
        arguments; None when the file does not list it."""
        entry = self.file.tools.get(tool)
        if entry is None:
            return None
        return max((entry.rclass, *(rule.rclass for rule in entry.rules)), key=CLASS_RANK.index)

    def _evidence(self, entry: ToolEntry | PromptEntry | ResourceEntry) -> dict[str, Any]:
        return {
            "registry": self.file.server.id,
            "status": self.file.status,
            "version": entry.evidence.version,
            "source": entry.evidence.source,
            "file": self.source,
            "digest": self.digest,
        }

    def judge_prompt(self, prompt: str) -> ClassVerdict | None:
        """The class of getting ``prompt``; None when the file does not list it."""
        entry = self.file.prompts.get(prompt)
        if entry is None:
            return None
        evidence = {**self._evidence(entry), "prompt": prompt}
        return verdict(
            entry.rclass, ClassSource.REGISTRY, entry.rationale, disclosure=entry.disclosure, **evidence
        )

    def judge_resource(self, uri: str) -> ClassVerdict | None:
        """The class of reading ``uri``: the entry naming it exactly, else the worst of the
        templates matching it (two that overlap can't lower each other); None when none does."""
        named = [name for name in self.resource_names if name.matches(uri)]
        exact = [name for name in named if name.pattern is None]
        verdicts = [self._resource_verdict(name.key) for name in exact or named]
        if not verdicts:
            return None
        return max(verdicts, key=lambda found: (CLASS_RANK.index(found.rclass), found.disclosure))

    def _resource_verdict(self, key: str) -> ClassVerdict:
        entry = self.file.resources[key]
        evidence = {**self._evidence(entry), "resource": key}
        return verdict(
            entry.rclass, ClassSource.REGISTRY, entry.rationale, disclosure=entry.disclosure, **evidence
        )

    def judge(self, tool: str, arguments: Mapping[str, Any]) -> ClassVerdict | None:
        """The class of a call of ``tool`` with ``arguments``; None when the file does not list it."""
        entry = self.file.tools.get(tool)
        if entry is None:
            return None
        evidence = self._evidence(entry)
        for index, rule in enumerate(entry.rules):
            if rule.matches(arguments):
                return verdict(
                    rule.rclass,
                    ClassSource.REGISTRY_ARGUMENTS,
                    rule.rationale,
                    disclosure=entry.disclosure and rule.rclass == "R4",
                    argumentRule=index,
                    argument=rule.argument,
                    **evidence,
                )
        return verdict(
            entry.rclass, ClassSource.REGISTRY, entry.rationale, disclosure=entry.disclosure, **evidence
        )


def load_record(path: str | Path, *, name: str | None = None) -> Record:
    """Read one registry file; :class:`PolicyFileError` names ``name`` (default the path) and the line."""
    source = name or str(path)
    try:
        text = read_text(path)
    except FileProblem as problem:
        raise PolicyFileError(source, [Problem(problem.line or 1, problem.column, problem.message)]) from None
    return parse_record(text, source=source)


def parse_record(text: str, *, source: str = "<registry>") -> Record:
    """Validate registry JSON given as text."""
    try:
        keys = located(text, source)
    except LocateError as error:
        raise PolicyFileError(
            source, [Problem(error.position.line, error.position.column, error.message)]
        ) from None
    try:
        file = RegistryFile.model_validate_json(text, strict=True, by_alias=True, by_name=False)
    except ValidationError as error:
        raise PolicyFileError(source, problems_of(keys, error)) from None
    shapes = {name: entry.shape() for name, entry in file.tools.items()}
    wrong = [
        Problem(where.line, where.column, f"tools.{name}.compensation.{'.'.join(path)}: {problem}")
        for name, entry in file.tools.items()
        if entry.compensation is not None
        for path, problem in entry.compensation.problems(shapes[name], shapes)
        for where in [keys.position_of(("tools", name, "compensation", *map(_key, path)))]
    ]
    names: list[ResourceName] = []
    for key in file.resources:
        try:
            names.append(ResourceName.parse(key))
        except ValueError as error:
            where = keys.position_of(("resources", key))
            wrong.append(Problem(where.line, where.column, f"resources: {error}"))
    if wrong:
        raise PolicyFileError(source, wrong)
    digest = sha256_digest(file.model_dump(mode="json", by_alias=True))
    return Record(file, source, digest, tuple(names))


def _key(part: str) -> str | int:
    """A key of a template's path as the key map spells it (an array's index is a number)."""
    return int(part) if part.isdigit() else part


@cache
def shipped() -> Mapping[str, Record]:
    """The registry files shipped with the Recorder, by server id (read once)."""
    folder = resources.files("hatp_journal.recorder.registry")
    records: dict[str, Record] = {}
    for item in sorted(folder.iterdir(), key=lambda found: found.name):
        if item.name.endswith(".json"):
            record = parse_record(item.read_text(encoding="utf-8"), source=f"registry/{item.name}")
            records[record.file.server.id] = record
    return records


# The argument tests. Each is deliberately narrow: a value it is unsure of fails the test, and the
# tool keeps its (higher) base class.

_SQL_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]")
_SQL_WORD = re.compile(r"[A-Za-z_]+")
_SQL_WRITES = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "REPLACE",
        "CREATE",
        "DROP",
        "ALTER",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "VACUUM",
        "REINDEX",
        "INTO",
        "COMMIT",
        "BEGIN",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "ANALYZE",
    }
)


def sql_single_select(query: str) -> bool:
    """One ``SELECT`` statement: no comments, no ``;`` but a final one, and none of the words that
    write, change transactions or attach files (``INTO`` included: ``SELECT … INTO`` creates a table
    in some databases), outside quoted strings and names."""
    if "--" in query or "/*" in query:
        return False
    bare = _SQL_QUOTED.sub(" ", query).strip()
    if bare.endswith(";"):
        bare = bare[:-1].rstrip()
    if any(char in bare for char in ";'\"`["):  # a second statement, or a quote left open
        return False
    words = [word.upper() for word in _SQL_WORD.findall(bare)]
    return bool(words) and words[0] == "SELECT" and not _SQL_WRITES.intersection(words)


def sql_identifier(value: str) -> bool:
    """A plain SQL name: letters, digits and underscores, not starting with a digit, at most 128."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", value) is not None


PREDICATES = {"sql-single-select": sql_single_select, "sql-identifier": sql_identifier}


class RegistryFileMissing(ValueError):
    """A file ``registry.files`` names can't be read; ``index`` says which, for the policy's line."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class Registry:
    """The registry a policy classifies by: records by server id, and which record each server uses."""

    records: Mapping[str, Record]
    servers: Mapping[str, str]

    @classmethod
    def load(cls, files: tuple[str, ...], servers: Mapping[str, str], base: Path) -> Registry:
        """The shipped records, then each of ``files`` (relative to ``base``), which replaces a
        shipped record of the same server id."""
        records = dict(shipped())
        for index, name in enumerate(files):
            path = base / name
            try:
                text = read_text(path)
            except FileProblem as problem:
                if problem.line is None:  # not a readable file at all: the policy's line says which
                    raise RegistryFileMissing(index, f"registry file {name}: {problem}") from None
                raise PolicyFileError(
                    path, [Problem(problem.line, problem.column, problem.message)]
                ) from None
            record = parse_record(text, source=str(path))
            records[record.file.server.id] = record
        return cls(records, dict(servers))

    def record_for(self, server: str) -> Record | None:
        """The record that classifies ``server`` (a recorder.toml name); None: none is named."""
        named = self.servers.get(server)
        return None if named is None else self.records.get(named)

    def is_disclosure(self, server: str, tool: str) -> bool:
        """Whether the registry calls ``tool`` of ``server`` a disclosure, whatever its arguments."""
        record = self.record_for(server)
        entry = record.file.tools.get(tool) if record is not None else None
        return entry is not None and entry.disclosure

    def compensation(self, server: str, tool: str) -> Compensation | None:
        """How the host undoes ``tool`` of ``server``, if the server's registry file says."""
        record = self.record_for(server)
        entry = record.file.tools.get(tool) if record is not None else None
        return entry.compensation if entry is not None else None
