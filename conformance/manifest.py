"""The requirements manifest (``requirements.toml``): each check's requirement and protocol.md section."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hatp_journal._shared.canonical import sha256_digest

TargetKind = Literal["server", "recorder"]


class Requirement(BaseModel):
    """One requirement: ``J-4.3`` points at protocol.md §4."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[JR]-\d+\.\d+$")
    spec: str = Field(pattern=r"^§\d+$")
    target: TargetKind
    title: str = Field(min_length=1)


class Manifest(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requirement: tuple[Requirement, ...]


def manifest_text() -> str:
    """The manifest as shipped in the package."""
    return resources.files("hatp_journal.conformance").joinpath("requirements.toml").read_text("utf-8")


@cache
def requirements() -> dict[str, Requirement]:
    """Requirement id → requirement, in the manifest's order."""
    manifest = Manifest.model_validate(tomllib.loads(manifest_text()))
    found = {requirement.id: requirement for requirement in manifest.requirement}
    if len(found) != len(manifest.requirement):
        raise ValueError("requirements.toml lists a requirement id twice")
    return found


@cache
def manifest_digest() -> str:
    """``sha256:`` of the manifest's content, so a result names exactly what was checked."""
    return sha256_digest([requirement.model_dump() for requirement in requirements().values()])
