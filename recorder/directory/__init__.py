"""The organisation's directory: people, their roles and their public keys (protocol.md §11).

It is read again at every decision, so authority is checked as it is *then*, never
inherited from when the ask was made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from hatp_journal._shared.files import FileProblem, check_nesting, read_text
from hatp_journal.recorder.directory.not_counted import NotCounted, Refused
from hatp_journal.recorder.file_places.locate import LocateError, located
from hatp_journal.recorder.file_places.problems import problems_of
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import VerifyKey, b64url_decode


class DirectoryError(ValueError):
    """The directory file can't be used."""


class Person(BaseModel):
    """One person who may decide asks."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    id: str = Field(min_length=1, description="e.g. human://acme.com/lee")
    name: str = ""
    roles: list[str] = Field(default_factory=list)
    email: str | None = Field(default=None, description="Where reviews, reminders and escalations go")
    public_key: str = Field(description="Raw Ed25519 public key, base64url")

    @field_validator("public_key")
    @classmethod
    def _an_ed25519_key(cls, value: str) -> str:
        # Refused when the file is read, naming its line, not at some later decision.
        try:
            raw = b64url_decode(value)
        except ValueError:
            raw = b""
        if len(raw) != 32:  # any 32 bytes are an Ed25519 public key
            raise ValueError("not an Ed25519 public key (32 bytes, base64url)")
        return value

    def verify_key(self) -> VerifyKey:
        """The person's key; a malformed one is a directory error."""
        try:
            return VerifyKey.from_raw(b64url_decode(self.public_key))
        except ValueError as error:
            raise DirectoryError(f"{self.id}: publicKey is not an Ed25519 key: {error}") from None


class Directory(BaseModel):
    """``{"people": [...]}``."""

    model_config = ConfigDict(extra="forbid")

    people: list[Person]

    @classmethod
    def load(cls, path: Path) -> Directory:
        """Read ``path``; every error names the file and the line, ``path:line:column: what``.

        Read through :mod:`hatp_journal._shared.files` (size, UTF-8 and nesting limits). Duplicate
        JSON keys and public keys that are not Ed25519 keys are refused like the policy file's errors.
        """
        try:
            text = read_text(path)
            check_nesting(text, path, syntax="json")
        except FileProblem as problem:
            raise DirectoryError(str(problem)) from None
        try:
            # Read at every decision: only a file that fails pays for finding the lines.
            return cls.model_validate(json.loads(text, object_pairs_hook=_no_duplicates), strict=True)
        except (ValueError, ValidationError):
            pass
        raise DirectoryError(_what_is_wrong(path, text))

    def snapshot(self) -> dict[str, Any]:
        """The directory as a Run Record keeps it at a decision (camelCase, as the file spells it)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def person(self, person_id: str) -> Person | None:
        """The person with ``person_id``, if listed."""
        return next((p for p in self.people if p.id == person_id), None)

    def not_listed(self, person_id: str) -> str:
        """Why ``person_id`` is refused: not listed, with the full id when a short name matches one.

        Ids are compared whole (they are URIs that may span organisations); the hint only helps
        someone who typed ``lee`` for ``human://acme.com/lee``.
        """
        like = [p.id for p in self.people if p.id.rsplit("/", 1)[-1] == person_id]
        hint = f" (did you mean {like[0]}?)" if len(like) == 1 else ""
        return f"{person_id} is not in the directory{hint}"

    def holders(self, role: str) -> list[str]:
        """Everyone who holds ``role`` (or is named by it directly)."""
        return [p.id for p in self.people if role in p.roles or p.id == role]

    def may_decide(self, person_id: str, role: str, key: VerifyKey) -> str | None:
        """Why ``person_id`` may not decide for ``role`` with ``key``; None if they may."""
        refused = self.refusal(person_id, role, key)
        return None if refused is None else refused.why

    def refusal(self, person_id: str, role: str, key: VerifyKey) -> Refused | None:
        """:meth:`may_decide` with the code of the check that failed."""
        person = self.person(person_id)
        if person is None:
            return Refused(NotCounted.NOT_PERMITTED, self.not_listed(person_id))
        if role not in person.roles and person.id != role:
            return Refused(NotCounted.NOT_PERMITTED, f"{person_id} does not hold {role}")
        try:
            listed = person.verify_key()
        except (DirectoryError, KeyFileError) as error:
            return Refused(NotCounted.WRONG_KEY, str(error))
        if listed.kid != key.kid:
            return Refused(NotCounted.WRONG_KEY, f"the key used is not {person_id}'s key in the directory")
        return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("duplicate key")  # located() names it and its line
    return found


def _what_is_wrong(path: Path, text: str) -> str:
    """Each problem of a directory that did not load, as ``path:line:column: what``, one per line."""
    try:
        keys = located(text, str(path))
        Directory.model_validate_json(text, strict=True)
    except LocateError as error:
        return f"{path}:{error.position.line}:{error.position.column}: {error}"
    except ValidationError as error:
        problems = sorted(problems_of(keys, error), key=lambda p: (p.line, p.column))
        return "\n".join(f"{path}:{p.line}:{p.column}: {p.message}" for p in problems)
    return f"{path}: not a directory of people"  # the fast and the located reading disagree; never seen
