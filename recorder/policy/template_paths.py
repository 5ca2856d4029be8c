"""The paths a host-undo template names: ``{root.field[0].name}``, ``{root.items[*].name}``.

A path is a root (``args``, ``result``, ``snapshot``, ``added``, ``removed``) followed by steps:
``.name`` (a member of an object), ``[N]`` (element N of an array, from 0) and ``[*]`` (every
element of an array: the rest of the path is taken from each, and the values come back as one
array). Two ``[*]`` in one path give one flat array. Nothing else parses (no slices, no filters,
no negative indexes): a template that does not parse is refused when the registry is loaded.

Where the registry gives a tool's JSON Schemas (``inputSchema``, ``outputSchema``), a path is also
walked through the schema when the file is loaded, so a field the schema does not have, an index
into something that is not an array or a member of something that is not an object is refused
before the day of an undo.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_STEP = re.compile(rf"\.({NAME})|\[(\d+|\*)\]")
_ROOT = re.compile(NAME)
BRACES = re.compile(r"\{([^{}]*)\}")
"""Every ``{…}`` in a template string: each must be a path that parses."""


class TemplateError(ValueError):
    """A template names a field its data does not have (at render time: the data lacks it)."""


StepKind = Literal["member", "index", "each"]


@dataclass(frozen=True)
class Step:
    """One step of a path: a member name, an index, or every element (``each``)."""

    kind: StepKind
    name: str = ""
    index: int = 0

    def text(self) -> str:
        """The step as written."""
        if self.kind == "member":
            return f".{self.name}"
        return "[*]" if self.kind == "each" else f"[{self.index}]"


@dataclass(frozen=True)
class Path:
    """A parsed placeholder: its root and steps."""

    root: str
    steps: tuple[Step, ...]

    @property
    def maps(self) -> bool:
        """Whether the path has a ``[*]`` (its value is an array)."""
        return any(step.kind == "each" for step in self.steps)

    def text(self) -> str:
        """The path as written, in braces."""
        return "{" + self.root + "".join(step.text() for step in self.steps) + "}"


def parse(text: str) -> Path:
    """The path inside one ``{…}``; :class:`TemplateError` saying where it stops parsing."""
    root = _ROOT.match(text)
    if root is None:
        raise TemplateError(f"{{{text}}} does not parse: a path starts with a root such as args")
    steps: list[Step] = []
    at = root.end()
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None:
            raise TemplateError(
                f"{{{text}}} does not parse at {text[at:]!r}: use .name, [N] or [*] after the root"
            )
        name, index = found.groups()
        if name is not None:
            steps.append(Step("member", name=name))
        elif index == "*":
            steps.append(Step("each"))
        else:
            steps.append(Step("index", index=int(index)))
        at = found.end()
    return Path(root.group(0), tuple(steps))


def resolve(data: Mapping[str, Any], path: Path) -> Any:
    """The value ``path`` names in ``data``; :class:`TemplateError` when the data lacks it."""
    if path.root not in data:
        raise TemplateError(f"{path.text()}: there is no {path.root!r} here")
    return _walk(data[path.root], path.steps, path)


def _walk(value: Any, steps: tuple[Step, ...], path: Path) -> Any:
    for at, step in enumerate(steps):
        if step.kind == "member":
            if not isinstance(value, Mapping) or step.name not in value:
                raise TemplateError(f"{path.text()}: there is no {step.name!r} here")
            value = value[step.name]
        elif not isinstance(value, list):
            raise TemplateError(f"{path.text()}: {step.text()} needs an array, found {_kind(value)}")
        elif step.kind == "index":
            if step.index >= len(value):
                raise TemplateError(f"{path.text()}: the array has {len(value)} elements")
            value = value[step.index]
        else:
            rest = steps[at + 1 :]
            mapped = [_walk(item, rest, path) for item in value]
            if any(s.kind == "each" for s in rest):  # a second [*]: one flat array
                return [item for inner in mapped for item in inner]
            return mapped
    return value


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else type(value).__name__


def schema_at(schema: Mapping[str, Any], path: Path) -> tuple[Mapping[str, Any] | None, str | None]:
    """The JSON Schema of the value ``path`` names, given the root's ``schema``, and what is wrong
    with the path against it (None: nothing). A schema that says too little to follow (no
    ``properties``, no ``items``) gives ``(None, None)``: the rest is not checked."""
    current: Mapping[str, Any] | None = schema
    mapped = False
    for step in path.steps:
        if current is None:
            return None, None
        kind = current.get("type")
        if step.kind == "member":
            if kind not in (None, "object"):
                return None, f"{path.text()}: .{step.name} reads a member of a {kind}"
            properties = current.get("properties")
            if not isinstance(properties, Mapping):
                return None, None
            if step.name not in properties:
                return None, f"{path.text()}: the schema has no field {step.name!r} there"
            current = properties[step.name] if isinstance(properties[step.name], Mapping) else None
        else:
            if kind not in (None, "array"):
                return None, f"{path.text()}: {step.text()} needs an array, the schema says {kind}"
            items = current.get("items")
            current = items if isinstance(items, Mapping) else None
            mapped = mapped or step.kind == "each"
    if current is None:
        return None, None
    return ({"type": "array", "items": current} if mapped else current), None


def type_of(schema: Mapping[str, Any] | None) -> str | None:
    """The JSON type a schema names, if it names one."""
    kind = schema.get("type") if schema is not None else None
    return kind if isinstance(kind, str) else None
